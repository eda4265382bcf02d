//! The access each request needs: by its gRPC path, or for the web inbox's pages by method and path;
//! the one table of who may call what.

use http::Method;

use crate::domain::Scope;
use crate::runtime::ANY_SCOPE_TO_SETTLE;

/// What a request to `path` needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone, authenticated or not (health).
    Open,
    /// A GET or HEAD of the web inbox's page or assets: open while the inbox is served (the page
    /// asks for a credential and sends it on each call it makes), otherwise as [`Access::Unknown`].
    Page,
    /// Reflection: open on a loopback listener or with `--public-reflection`, otherwise any
    /// authenticated principal.
    Reflection,
    /// An authenticated principal with this scope.
    Scope(Scope),
    /// An authenticated principal with at least one of these scopes; the handler checks which the
    /// request needs (an answer: the scope of the call's kind, `runtime::settle_access`).
    AnyScope(&'static [Scope]),
    /// A path of no askuser service: an authenticated principal with `admin` (tonic answers
    /// UNIMPLEMENTED after that).
    Unknown,
}

/// The path of askuser's MCP endpoint (Streamable HTTP).
pub const MCP_PATH: &str = "/mcp";

/// The scopes that open the MCP endpoint; each tool checks the one it needs (`asks:create` to
/// ask, `runs:start` to run an agent).
const MCP_SCOPES: [Scope; 2] = [Scope::AsksCreate, Scope::RunsStart];

/// The access a `method` request to `path` needs: a page's, or its RPC's
/// (`/package.Service/Method`), whatever its method (every gRPC and gRPC-Web call is a POST).
///
/// `RunAgent` needs `runs:read` here: whether a stream starts a run (`runs:start`) or attaches to
/// one is in its first frame, which the handler checks.
pub fn access(method: &Method, path: &str) -> Access {
    if (method == Method::GET || method == Method::HEAD) && crate::web::is_page_path(path) {
        return Access::Page;
    }
    if path == MCP_PATH {
        return Access::AnyScope(&MCP_SCOPES);
    }
    rpc_access(path)
}

/// The access the RPC at `path` needs.
fn rpc_access(path: &str) -> Access {
    let Some((service, method)) = path.trim_start_matches('/').split_once('/') else {
        return Access::Unknown;
    };
    match (service, method) {
        ("grpc.health.v1.Health", _) => Access::Open,
        ("grpc.reflection.v1.ServerReflection" | "grpc.reflection.v1alpha.ServerReflection", _) => {
            Access::Reflection
        }
        ("askuser.v1.AgentService", method) => match method {
            "RunAgent" | "WatchRun" | "GetRun" | "ListRuns" | "WatchPendingCalls" => {
                Access::Scope(Scope::RunsRead)
            }
            "ResumeRun" => Access::AnyScope(&ANY_SCOPE_TO_SETTLE),
            "CancelRun" => Access::Scope(Scope::RunsCancel),
            "ListAgents" => Access::Scope(Scope::AgentsRead),
            "ClaimCall" => Access::Scope(Scope::ToolsExecute),
            _ => Access::Unknown,
        },
        ("askuser.v1.HumanService", "Ask") => Access::Scope(Scope::AsksCreate),
        // It validates what a run would ask, outside any run: part of starting runs.
        ("askuser.v1.ToolService", "AskUser" | "RenderQuestion") => Access::Scope(Scope::RunsStart),
        // Within the caller's tenant; other tenants' keys take `operator` (admin_service.rs).
        ("askuser.v1.AdminService", _) => Access::Scope(Scope::Admin),
        _ => Access::Unknown,
    }
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    #[test]
    fn each_rpc_has_its_scope() {
        let post = |path| access(&Method::POST, path);
        assert_eq!(
            post("/askuser.v1.AgentService/ResumeRun"),
            Access::AnyScope(&[Scope::RunsAnswer, Scope::ToolsExecute])
        );
        assert_eq!(
            post("/askuser.v1.AgentService/ClaimCall"),
            Access::Scope(Scope::ToolsExecute)
        );
        assert_eq!(post("/grpc.health.v1.Health/Check"), Access::Open);
        assert_eq!(post("/askuser.v1.AgentService/Nope"), Access::Unknown);
        assert_eq!(post("garbage"), Access::Unknown);
    }

    #[test]
    fn only_reading_a_page_is_a_page() {
        for path in ["/", "/runs/01J9", "/assets/app.js"] {
            assert_eq!(access(&Method::GET, path), Access::Page, "{path}");
            assert_eq!(access(&Method::HEAD, path), Access::Page, "{path}");
            assert_eq!(access(&Method::POST, path), Access::Unknown, "{path}");
        }
        // A GET of an RPC needs what the RPC needs; of anything else, what an unknown path does.
        assert_eq!(
            access(&Method::GET, "/askuser.v1.AgentService/ListRuns"),
            Access::Scope(Scope::RunsRead)
        );
        assert_eq!(
            access(&Method::GET, "/askuser.v1.AdminService/ListApiKeys"),
            Access::Scope(Scope::Admin)
        );
        assert_eq!(access(&Method::GET, "/runs/a/b"), Access::Unknown);
        assert_eq!(access(&Method::GET, "/nope"), Access::Unknown);
    }
}
