"""Credentials and TLS of a connection: the bearer token every call carries, and the channel's
transport security."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

TokenProvider = Callable[[], str]
"""Returns the token (an API key or a JWT) for the next call; called once per call, so it may
rotate tokens."""


def static_token(token: str) -> TokenProvider:
    """A provider of the same token for every call, e.g. an API key."""
    return lambda: token


@dataclass(frozen=True)
class TLS:
    """Transport security of a connection. `TLS()` verifies the server against the system's root
    certificates; the fields are PEM bytes."""

    root_certificates: bytes | None = None
    """The CA certificates that verify the server; None: the system's roots."""
    certificate_chain: bytes | None = None
    """The client certificate, for a server that asks for one (mTLS); with `private_key`."""
    private_key: bytes | None = None
    """The client certificate's private key."""
    server_name: str | None = None
    """The name the server's certificate must hold, when it is not the host of the address."""

    @classmethod
    def from_files(
        cls,
        ca: str | Path | None = None,
        cert: str | Path | None = None,
        key: str | Path | None = None,
        *,
        server_name: str | None = None,
    ) -> TLS:
        """TLS from PEM files: the CA (None: the system's roots), and the client certificate and
        its key for mTLS (both or neither)."""

        def read(path: str | Path | None) -> bytes | None:
            return None if path is None else Path(path).read_bytes()

        return cls(read(ca), read(cert), read(key), server_name)

    def channel_credentials(self) -> grpc.ChannelCredentials:
        if (self.certificate_chain is None) != (self.private_key is None):
            raise ValueError("a client certificate goes with its private key")
        return grpc.ssl_channel_credentials(
            root_certificates=self.root_certificates,
            private_key=self.private_key,
            certificate_chain=self.certificate_chain,
        )

    def channel_options(self) -> list[tuple[str, Any]]:
        if self.server_name is None:
            return []
        return [("grpc.ssl_target_name_override", self.server_name)]


class _CallDetails(
    namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")),
    grpc.ClientCallDetails,
):
    """A call's details with other metadata (grpc.ClientCallDetails is an interface only)."""


class BearerToken(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds `authorization: Bearer <token>` to every call, streaming ones included. An interceptor
    rather than call credentials, which gRPC sends over TLS only: a plaintext loopback server takes
    keys too."""

    def __init__(self, token_provider: TokenProvider) -> None:
        self._token_provider = token_provider

    def _with_token(self, details: grpc.ClientCallDetails) -> _CallDetails:
        metadata = list(details.metadata or ())
        metadata.append(("authorization", f"Bearer {self._token_provider()}"))
        return _CallDetails(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )

    def intercept_unary_unary(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any], client_call_details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any], client_call_details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        return continuation(self._with_token(client_call_details), request)

    def intercept_stream_unary(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any], client_call_details: grpc.ClientCallDetails, request_iterator: Any
    ) -> Any:
        return continuation(self._with_token(client_call_details), request_iterator)

    def intercept_stream_stream(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any], client_call_details: grpc.ClientCallDetails, request_iterator: Any
    ) -> Any:
        return continuation(self._with_token(client_call_details), request_iterator)
