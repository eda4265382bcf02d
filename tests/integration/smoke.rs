use crate::common;

use common::{RunStream, Server};

#[tokio::test]
async fn demo_agent_round_trip() {
    let server = Server::start();
    let mut client = server.agents().await;
    let mut run = RunStream::start(&mut client, "environment").await;
    let question = run.next_suspended().await;
    run.send_text(&question.tool_call_id, "staging").await;
    assert_eq!(run.completed_text().await, "Deploying to staging");
}
