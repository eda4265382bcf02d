//! What browsers send on the gRPC port: gRPC-Web, which tonic-web translates to gRPC, and, with the
//! inbox served, plain HTTP/1.1 requests for its pages. tonic-web answers every HTTP/1.1 request
//! that is not gRPC-Web with 400, so those pass around it, on to the routes untranslated.

use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Request, Response, Version};
use tonic::body::Body;
use tonic::codegen::{Body as HttpBody, Bytes, StdError};
use tonic_web::{GrpcWebLayer, GrpcWebService};
use tower::{Layer, Service, ServiceExt};

use super::pages::is_grpc;

/// Wraps a service in [`BrowserService`].
#[derive(Clone, Copy, Debug)]
pub struct BrowserLayer {
    /// Whether the inbox's pages are served (`--ui`); without them every request meets tonic-web.
    pages: bool,
}

impl BrowserLayer {
    pub fn new(pages: bool) -> BrowserLayer {
        BrowserLayer { pages }
    }
}

impl<S: Clone> Layer<S> for BrowserLayer {
    type Service = BrowserService<S>;

    fn layer(&self, inner: S) -> BrowserService<S> {
        BrowserService {
            grpc_web: GrpcWebLayer::new().layer(inner.clone()),
            inner,
            pages: self.pages,
        }
    }
}

/// gRPC-Web and gRPC through tonic-web; HTTP/1 requests that are not gRPC straight to `S` while
/// the pages are served.
#[derive(Clone, Debug)]
pub struct BrowserService<S> {
    grpc_web: GrpcWebService<S>,
    inner: S,
    pages: bool,
}

impl<S, ReqBody> Service<Request<ReqBody>> for BrowserService<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    GrpcWebService<S>: Service<Request<ReqBody>, Response = Response<Body>, Error = S::Error>,
    <GrpcWebService<S> as Service<Request<ReqBody>>>::Future: Send + 'static,
    ReqBody: HttpBody<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.grpc_web.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let page = self.pages && request.version() < Version::HTTP_2 && !is_grpc(request.headers());
        match page {
            // A clone made ready here serves it: `grpc_web` stays ready for the next request.
            true => Box::pin(self.inner.clone().oneshot(request.map(Body::new))),
            false => Box::pin(self.grpc_web.call(request)),
        }
    }
}
