"""Heavy modules load only when first used (lazy imports keep startup low: bench/README.md).

The daemon checks run the real daemon (`python -m cody_daemon`, as an editor starts it) with
`PYTHONPROFILEIMPORTTIME=1`, which makes Python print one line per module it imports to
stderr; the test reads them back. No hook in the daemon is involved.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from cody_daemon.rpc import warm_up

from tests.support.daemon import CodyEnv, Daemon
from tests.support.mock_responses import MockResponsesServer, text, tool_call

HEAVY = ("httpx", "trafilatura", "mcp", "prompt_toolkit", "rich", "lxml")

TERMINAL_UI = ("rich", "prompt_toolkit", "click", "pygments")
"""Never imported by the daemon: httpx imports its own CLI (click, rich, pygments) unless
the daemon's entry point stops it (cli._prepare_imports)."""

NOT_BEFORE_PROMPT = (
    *HEAVY,
    "websockets",  # only `--listen ws://...` imports it (rpc/web_listen.py)
    *TERMINAL_UI,
    "httpcore",
    "anyio",
    "httpx_sse",
    "lsprotocol.types",  # the real one: pygls runs on the stand-in (rpc/lazy_lsprotocol.py)
    "cody_daemon.providers.http_provider",
    "cody_daemon.providers.openai_responses",
    "cody_daemon.providers.openai_chat",
    "cody_daemon.providers.anthropic_messages",
    "cody_daemon.providers.oauth_chatgpt",
    "cody_daemon.backends.codex_app_server",
    "cody_daemon.backends.claude_code",
    "cody_daemon.history.importer",
    "cody_daemon.lsp.pool",  # language servers: on the first edit of a file one handles
    "cody_daemon.lsp.client",
    "pygls.lsp.client",  # (pygls.lsp itself: pygls imports it at once)
)
"""Not imported before the first `session/prompt`: only a turn (or a history import) needs
them, so an editor's `initialize` and first `session/new` never wait for them."""

NOT_BEFORE_INITIALIZE = (
    *NOT_BEFORE_PROMPT,
    "cody_daemon.engine.manager",
    "cody_daemon.engine.session",
    "cody_daemon.engine.turn",
    "cody_daemon.engine.agents",
    "cody_daemon.engine.history",
    "cody_daemon.tools.registry",
    "cody_daemon.providers.pool",
    "cody_daemon.store.store",
    "cody_daemon.backends.base",
    "cody_daemon.rpc.link",
    "cody_protocol.updates",
    "cody_protocol.permission",
    "cody_protocol.history",
    "pydantic",
    "pydantic_core",
    "cody_protocol._base",
    "cody_protocol.initialize",
    "cody_daemon.config.model",
    "cody_daemon.config.loader",
    "cody_daemon.validation",
)
"""Not imported before the `initialize` answer: the engine is built on first use (app.py),
and the answer is read and written without the models (rpc/initialize_wire.py) from the
provider listing (providers/listing.py), so pydantic waits for the first session request."""


def loaded_after(statement: str, watched: tuple[str, ...] = HEAVY) -> set[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return loaded(set(result.stdout.split()), watched)


def imported(lines: list[str]) -> set[str]:
    """Module names from `-X importtime` lines (`import time: self | cumulative | name`)."""
    names = set()
    for line in lines:
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def loaded(names: set[str], watched: tuple[str, ...]) -> set[str]:
    """The watched modules (or packages: `httpx` covers `httpx._client`) among `names`."""
    return {w for w in watched if any(n == w or n.startswith(w + ".") for n in names)}


NO_WARM_UP = ("--no-warm-up",)
"""What a request imports on demand (rpc/warm_up.py would load some of it ahead, when idle)."""


async def start_profiled(
    tmp_path: Path, model_url: str | None = None, args: tuple[str, ...] = ()
) -> Daemon:
    cody_env = CodyEnv.create(tmp_path)
    cody_env.env["PYTHONPROFILEIMPORTTIME"] = "1"
    if model_url is not None:
        cody_env.use_mock_provider(model_url)
    return await Daemon.start(cody_env, args=args)


def test_starting_the_daemon_loads_no_heavy_module() -> None:
    assert loaded_after("import cody_daemon.app, cody_daemon.cli") == set()


def test_the_client_library_loads_no_terminal_ui() -> None:
    assert loaded_after("import cody_client.client, cody_client.cli") == set()


def test_exec_reaches_its_daemon_spawn_without_the_protocol_models() -> None:
    """`cody-client exec` starts the daemon first, then imports its own stack while the daemon
    starts (cli._exec_daemon_first): nothing before the spawn may import the models."""
    statement = (
        "from cody_client import cli\n"
        "cli.build_parser(cli.split_subcommand(['exec', 'hi'])[0] or 'chat')\n"
        "import cody_client.process"
    )
    watched = ("pydantic", "cody_protocol", "cody_client.doctor", "cody_client.history_cli")
    assert loaded_after(statement, watched) == set()


def test_exec_starts_its_daemon_before_asyncio_is_imported() -> None:
    """`cody-client`'s entry point (launch.py) starts `exec`'s daemon with the standard
    library only: asyncio, argparse and the client's stack load while the daemon starts."""
    statement = (
        "from cody_client import launch, daemon_command, process_start, exec_daemon\n"
        "import cody_protocol.endpoint"
    )
    watched = ("asyncio", "argparse", "pydantic", "cody_client.cli", "cody_client.process")
    assert loaded_after(statement, watched) == set()


async def test_initialize_is_answered_without_the_engine(tmp_path: Path) -> None:
    daemon = await start_profiled(tmp_path, args=NO_WARM_UP)
    result = await daemon.initialize()
    assert result["protocolVersion"] == 1
    await daemon.close()
    names = imported(daemon.stderr)
    assert {"pygls.server", "cody_daemon.app", "cody_daemon.rpc.initialize_wire"} <= names
    assert loaded(names, NOT_BEFORE_INITIALIZE) == set()


async def test_a_config_file_seen_before_is_not_validated_again_at_initialize(
    tmp_path: Path,
) -> None:
    """With a config.toml, the first start validates it (pydantic) and keeps the provider
    listing; the next start answers `initialize` from that listing, pydantic-free, with the
    configured provider in it."""
    cody_env = CodyEnv.create(tmp_path)
    cody_env.env["PYTHONPROFILEIMPORTTIME"] = "1"
    cody_env.use_mock_provider("http://127.0.0.1:9/v1")
    answers, imports = [], []
    for _ in range(2):
        daemon = await Daemon.start(cody_env, args=NO_WARM_UP)
        answers.append(await daemon.initialize())
        await daemon.close()
        imports.append(imported(daemon.stderr))
    assert "pydantic" in imports[0]  # the file was validated once...
    assert loaded(imports[1], NOT_BEFORE_INITIALIZE) == set()  # ...and not again
    first, second = answers
    assert first == second
    assert second["_meta"]["cody"]["defaultProvider"] == "mock"


async def test_nothing_only_a_turn_needs_is_imported_before_the_first_prompt(
    tmp_path: Path,
) -> None:
    daemon = await start_profiled(tmp_path)
    await daemon.initialize()
    await daemon.new_session()
    await daemon.close()
    names = imported(daemon.stderr)
    assert "cody_daemon.engine.manager" in names  # the session itself is real
    assert loaded(names, NOT_BEFORE_PROMPT) == set()


async def test_the_warm_up_loads_only_what_a_session_loads_anyway(tmp_path: Path) -> None:
    """Every module of Cody's that rpc/warm_up.py imports ahead is one `session/new` imports on
    demand (pydantic's pieces load through its lazy attributes, which `-X importtime` does not
    report one by one)."""
    daemon = await start_profiled(tmp_path, args=NO_WARM_UP)
    await daemon.initialize()
    await daemon.new_session()
    await daemon.close()
    names = imported(daemon.stderr)
    ahead = {step.partition(":")[0] for step in warm_up.STEPS}
    assert {"pydantic", "pydantic_core"} <= names
    assert {name for name in ahead if name.startswith("cody_")} - names == set()


async def until_imported(daemon: Daemon, module: str, timeout_s: float = 10.0) -> None:
    """Wait until the daemon's stderr says it imported `module`."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while module not in imported(daemon.stderr):
        assert asyncio.get_running_loop().time() < deadline, f"{module} was never imported"
        await asyncio.sleep(0.02)


async def test_an_idle_daemon_has_loaded_what_the_first_session_needs(tmp_path: Path) -> None:
    """rpc/warm_up.py: while the client is quiet after `initialize`, the daemon imports what
    `session/new` needs, so that request imports nothing heavy itself, and still nothing
    only a turn needs."""
    daemon = await start_profiled(tmp_path)
    await daemon.initialize()
    await until_imported(daemon, "cody_daemon.rpc.link")  # the last import of the warm-up
    await asyncio.sleep(0.3)  # and its model builds
    before = len(daemon.stderr)
    await daemon.new_session()
    await daemon.close()
    during = imported(daemon.stderr[before:])
    assert loaded(during, ("pydantic", "cody_protocol", "cody_daemon.engine")) == set()
    assert loaded(imported(daemon.stderr), NOT_BEFORE_PROMPT) == set()


async def test_a_turn_imports_its_provider_but_never_a_terminal_ui(tmp_path: Path) -> None:
    async with MockResponsesServer() as model:
        daemon = await start_profiled(tmp_path, model.base_url)
        model.enqueue(text("hello"))
        await daemon.initialize()
        session_id = await daemon.new_session()
        result = await daemon.prompt(session_id, "hi")
        assert result["stopReason"] == "end_turn"
        await daemon.close()
    names = imported(daemon.stderr)
    assert {"httpx", "cody_daemon.providers.openai_responses"} <= names
    assert loaded(names, TERMINAL_UI) == set()
    assert "lsprotocol.types" not in names


async def test_the_language_server_pool_loads_at_the_first_edit_of_a_file_it_handles(
    tmp_path: Path,
) -> None:
    """pygls' LSP client (and with it the real lsprotocol) loads only when an edit needs a
    server: a text file does not, a Python file (ruff) does."""
    async with MockResponsesServer() as model:
        cody_env = CodyEnv.create(tmp_path)
        cody_env.env["PYTHONPROFILEIMPORTTIME"] = "1"
        cody_env.env.pop("CODY_LSP")  # the harness turns language servers off
        cody_env.use_mock_provider(model.base_url)
        daemon = await Daemon.start(cody_env)
        await daemon.initialize()
        sid = await daemon.new_session(approvalPolicy="never")
        model.enqueue(tool_call("writeFile", {"filePath": "notes.txt", "content": "hi\n"}))
        model.enqueue(text("noted"))
        await daemon.prompt(sid, "write notes")
        after_text = len(daemon.stderr)
        model.enqueue(tool_call("writeFile", {"filePath": "a.py", "content": "x = 1\n"}))
        model.enqueue(text("written"))
        await daemon.prompt(sid, "write code")
        await daemon.close()
    lsp_modules = ("cody_daemon.lsp.pool", "cody_daemon.lsp.client", "pygls.lsp.client")
    assert loaded(imported(daemon.stderr[:after_text]), lsp_modules) == set()
    assert "cody_daemon.lsp.service" in imported(daemon.stderr[:after_text])
    assert loaded(imported(daemon.stderr), lsp_modules) == set(lsp_modules)
