-- askuser schema v12: what a call the server runs needs to go on after a person answered the input
-- its tool asked for mid-call (an MCP server's elicitation: the request state to echo and the
-- answers so far), kept with the call so that any replica can go on after a restart.
ALTER TABLE tool_calls ADD COLUMN continuation TEXT;
