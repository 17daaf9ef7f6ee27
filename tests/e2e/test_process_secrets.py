"""A process that outlives its call is redacted like any tool output (issue 26), through the
real daemon: what `readOutput` and `writeStdin` return to the model and the live output a
client receives between turns hold no piece of a key the daemon knows."""

from __future__ import annotations

import json

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call
from tests.support.model_inputs import tool_outputs

KEY = "sk-MARKER-bgproc-8c1e5a9d3f7b2064"
APPENDING = {"_meta": {"cody": {"appendOutput": True}}}


async def test_a_background_process_never_shows_a_key_to_the_model_or_a_client(
    cody_env: CodyEnv, model: MockResponsesServer
) -> None:
    cody_env.env["OPENAI_API_KEY"] = KEY
    (cody_env.workspace / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    cody_env.use_mock_provider(
        model.base_url, extra='approval_policy = "never"\nsandbox_mode = "danger-full-access"'
    )
    leaky = "sleep 0.2; cat .env; sleep 60"
    model.enqueue(
        tool_call("exec", {"command": leaky, "background": True}, call_id="bg"),
        tool_call("exec", {"command": ["python3", "-i", "-q"], "yieldMs": 300}, call_id="repl"),
    )
    model.enqueue(
        tool_call("readOutput", {"processId": 1, "waitMs": 5000}, call_id="read"),
        tool_call(
            "writeStdin",
            {"processId": 2, "chars": "print(open('.env').read())\n", "waitMs": 5000},
            call_id="ask",
        ),
    )
    model.enqueue(text("done"))
    daemon = await Daemon.start(cody_env)
    try:
        await daemon.initialize(APPENDING)
        sid = await daemon.new_session()
        await daemon.prompt(sid, "read the keys")
        outputs = tool_outputs(model.requests[-1])
        assert "OPENAI_API_KEY=[REDACTED]" in outputs["read"], outputs["read"]
        assert "OPENAI_API_KEY=[REDACTED]" in outputs["ask"], outputs["ask"]
        listed = await daemon.request("_cody/session/processes", {"sessionId": sid})
        assert listed["processes"][0]["command"] == leaky

        def streamed() -> str:
            return "".join(
                u["content"][0]["content"]["text"]
                for u in daemon.tool_updates(sid, "bg")
                if u.get("_meta", {}).get("cody", {}).get("appendOutput")
            )

        await daemon.wait_for(lambda: "OPENAI_API_KEY=[REDACTED]" in streamed())
        everything = json.dumps(daemon.received) + json.dumps(
            [r.body for r in model.requests], default=str
        )
        assert KEY[:12] not in everything and KEY[-12:] not in everything
    finally:
        await daemon.close()
