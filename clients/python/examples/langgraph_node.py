"""A LangGraph node that has a person approve a deploy before the graph goes on, through askuser.

`approve_deploy(state) -> state` is a node as LangGraph calls it: it reads the graph's state, asks
for approval with `request_approval` (the call waits, durably, until someone decides in the inbox,
the terminal or any other askuser client; days if need be, across restarts of either side), and
returns the state updated with the decision. LangGraph is not needed to run it: the graph below is
in a comment, and the tests call the node as the graph would (clients/python/tests/test_human.py).

    # LangGraph calls it like this (pip install langgraph):
    #
    #   from langgraph.graph import END, START, StateGraph
    #
    #   graph = StateGraph(DeployState)
    #   graph.add_node("approve_deploy", approve_deploy)
    #   graph.add_node("deploy", run_deploy)
    #   graph.add_edge(START, "approve_deploy")
    #   graph.add_conditional_edges("approve_deploy", lambda s: "deploy" if s["approved"] else END)
    #   graph.add_edge("deploy", END)
    #   graph.compile().invoke({"service": "api", "environment": "production", "build": "4417"})

Run it by hand against a server (`askuser serve`), and decide with `askuser pending` / `askuser
answer RUN CALL --approve` (or in the inbox):

    python examples/langgraph_node.py [HOST:PORT]   # or ASKUSER_ADDR; default 127.0.0.1:50051; a key in ASKUSER_API_KEY
"""

from __future__ import annotations

import os
import sys
from typing import Any, TypedDict

from askuser_client import AskUserClient


class DeployState(TypedDict, total=False):
    """The graph's state: what to deploy, then what the approver decided."""

    service: str
    environment: str
    build: str
    approved: bool
    decision: str
    reason: str
    approved_by: str


ADDRESS = os.environ.get("ASKUSER_ADDR", "127.0.0.1:50051")
client = AskUserClient(ADDRESS, api_key=os.environ.get("ASKUSER_API_KEY") or None)
"""One client for the process: a node is called many times."""


def approve_deploy(state: DeployState) -> DeployState:
    """The node: asks for approval of the deploy in `state` and returns the state with the decision
    (an edited environment or service replaces the asked one)."""
    arguments: dict[str, Any] = {"service": state["service"], "environment": state["environment"]}
    decision = client.request_approval(
        "deploy",
        arguments,
        f"deploy build {state.get('build', '?')} of {state['service']} to {state['environment']}",
        context=f"The build **{state.get('build', '?')}** passed its checks; the graph wants to ship it.",
        # A retry of this node (LangGraph replays a node after a crash) follows the same request.
        request_id=f"deploy-{state['service']}-{state.get('build', '')}" if state.get("build") else None,
    )
    updated: DeployState = {
        **state,
        "approved": decision.approved,
        "decision": decision.kind,
        "reason": decision.reason,
        "approved_by": decision.settled_by,
    }
    # An edit may change what is deployed: the graph goes on with the edited arguments.
    if "service" in decision.arguments:
        updated["service"] = decision.arguments["service"]
    if "environment" in decision.arguments:
        updated["environment"] = decision.arguments["environment"]
    return updated


if __name__ == "__main__":
    if len(sys.argv) > 1:
        client = AskUserClient(sys.argv[1], api_key=os.environ.get("ASKUSER_API_KEY") or None)
    print(approve_deploy({"service": "api", "environment": "production", "build": "4417"}))
