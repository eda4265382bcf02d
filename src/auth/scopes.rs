//! The scope each RPC needs, by its gRPC path: the one table of who may call what.

use crate::domain::Scope;

/// What a request to `path` needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone, authenticated or not (health).
    Open,
    /// Reflection: open on a loopback listener or with `--public-reflection`, otherwise any
    /// authenticated principal.
    Reflection,
    /// An authenticated principal with this scope.
    Scope(Scope),
    /// A path of no askuser service: an authenticated principal with `admin` (tonic answers
    /// UNIMPLEMENTED after that).
    Unknown,
}

/// The access `path` (`/package.Service/Method`) needs.
///
/// `RunAgent` needs `runs:read` here: whether a stream starts a run (`runs:start`) or attaches to
/// one is in its first frame, which the handler checks.
pub fn access(path: &str) -> Access {
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
            "ResumeRun" => Access::Scope(Scope::RunsAnswer),
            "CancelRun" => Access::Scope(Scope::RunsCancel),
            "ListAgents" => Access::Scope(Scope::AgentsRead),
            "ClaimCall" => Access::Scope(Scope::ToolsExecute),
            _ => Access::Unknown,
        },
        // It validates what a run would ask, outside any run: part of starting runs.
        ("askuser.v1.ToolService", "AskUser") => Access::Scope(Scope::RunsStart),
        ("askuser.v1.AdminService", _) => Access::Scope(Scope::Admin),
        _ => Access::Unknown,
    }
}

#[cfg(test)]
mod internal_tests {
    use super::*;

    #[test]
    fn each_rpc_has_its_scope() {
        assert_eq!(
            access("/askuser.v1.AgentService/ResumeRun"),
            Access::Scope(Scope::RunsAnswer)
        );
        assert_eq!(
            access("/askuser.v1.AgentService/ClaimCall"),
            Access::Scope(Scope::ToolsExecute)
        );
        assert_eq!(access("/grpc.health.v1.Health/Check"), Access::Open);
        assert_eq!(access("/askuser.v1.AgentService/Nope"), Access::Unknown);
        assert_eq!(access("garbage"), Access::Unknown);
    }
}
