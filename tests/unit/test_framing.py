"""Frame reading and writing on stdio: LSP Content-Length and NDJSON, auto-detected."""

from __future__ import annotations

import asyncio
import json

import pytest
from cody_daemon.rpc.framing import (
    MAX_FRAME_BYTES,
    MAX_HEADER_BYTES,
    FrameError,
    FrameReader,
    FramingMode,
    encode_frame,
)

from tests.support.bad_frames import BAD_FRAME_CASES, BadFrame

Frames = list[bytes | FrameError]


def make_reader(data: bytes, *, eof: bool = True) -> asyncio.StreamReader:
    """A reader like the daemon's stdin holding `data`."""
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


async def read_all(
    data: bytes,
    mode: FramingMode = "auto",
    *,
    max_frame: int = MAX_FRAME_BYTES,
    max_header: int = MAX_HEADER_BYTES,
) -> tuple[Frames, FrameReader]:
    """Every frame until the reader reports end of input (None)."""
    frames = FrameReader(
        make_reader(data), mode, max_frame_bytes=max_frame, max_header_bytes=max_header
    )
    out: Frames = []
    for _ in range(100):
        frame = await frames.read()
        if frame is None:
            return out, frames
        out.append(frame)
    raise AssertionError("the reader never reported end of input")


def lsp(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


REQ = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
NOTE = b'{"jsonrpc":"2.0","method":"initialized"}'


# --- LSP ------------------------------------------------------------------------------------


async def test_lsp_detected_from_content_length() -> None:
    frames, reader = await read_all(lsp(REQ) + lsp(NOTE))
    assert frames == [REQ, NOTE]
    assert reader.framing == "lsp"


async def test_lsp_body_may_contain_newlines_and_headers_text() -> None:
    body = b'{"text": "a\\nContent-Length: 5\\n"}\n\n'
    frames, _ = await read_all(lsp(body) + lsp(REQ))
    assert frames == [body, REQ]


async def test_lsp_extra_headers_any_case_and_order() -> None:
    data = (
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
        + b"content-length: %d\r\n\r\n" % len(REQ)
        + REQ
        + b"CONTENT-LENGTH:%d\r\nX-Other: 1\r\n\r\n" % len(NOTE)
        + NOTE
    )
    frames, reader = await read_all(data)
    assert frames == [REQ, NOTE]
    assert reader.framing == "lsp"


async def test_lsp_with_bare_newline_line_endings() -> None:
    data = b"Content-Length: %d\n\n%s" % (len(REQ), REQ) + b"Content-Length: %d\n\n%s" % (
        len(NOTE),
        NOTE,
    )
    frames, _ = await read_all(data)
    assert frames == [REQ, NOTE]


async def test_blank_lines_between_lsp_frames_are_ignored() -> None:
    frames, _ = await read_all(b"\r\n" + lsp(REQ) + b"\r\n\r\n" + lsp(NOTE))
    assert frames == [REQ, NOTE]


async def test_garbage_before_a_header_resyncs_to_the_next_header() -> None:
    data = b"oops, a stray print\r\nmore noise\r\n" + lsp(REQ) + b"junk\r\n\r\n" + lsp(NOTE)
    frames, reader = await read_all(data)
    assert [f for f in frames if not isinstance(f, FrameError)] == [REQ, NOTE]
    assert reader.framing == "lsp"


async def test_header_block_without_content_length_is_an_error_then_reading_goes_on() -> None:
    data = b"Content-Type: application/json\r\n\r\n" + lsp(REQ)
    frames, _ = await read_all(data)
    assert len(frames) == 2
    assert isinstance(frames[0], FrameError)
    assert "Content-Length" in frames[0].message
    assert frames[1] == REQ


async def test_eof_mid_body_is_end_of_input() -> None:
    frames, _ = await read_all(lsp(REQ) + b'Content-Length: 100\r\n\r\n{"jsonrpc"')
    assert frames == [REQ]


async def test_eof_inside_the_header_block_is_end_of_input() -> None:
    frames, _ = await read_all(lsp(REQ) + b"Content-Length: 10\r\n")
    assert frames == [REQ]


async def test_forced_lsp_mode_does_not_guess_ndjson() -> None:
    frames, reader = await read_all(b"{}\r\n\r\n" + lsp(REQ), "lsp")
    assert reader.framing == "lsp"
    assert isinstance(frames[0], FrameError)
    assert frames[1:] == [REQ]


async def test_large_lsp_body() -> None:
    body = json.dumps({"text": "x" * (300 * 1024)}).encode()
    frames, _ = await read_all(lsp(body))
    assert frames == [body]


async def test_over_long_header_line_is_a_frame_error_not_an_exception() -> None:
    data = b"Content-Length: 2\r\nX-Junk: " + b"a" * 500 + b"\r\n\r\n{}" + lsp(REQ)
    frames, _ = await read_all(data, max_header=128)
    assert isinstance(frames[0], FrameError)
    assert frames[-1] == REQ


# --- NDJSON ---------------------------------------------------------------------------------


async def test_ndjson_detected_from_an_object_or_array() -> None:
    frames, reader = await read_all(REQ + b"\n" + NOTE + b"\n")
    assert frames == [REQ, NOTE]
    assert reader.framing == "ndjson"

    frames, reader = await read_all(b'[{"jsonrpc":"2.0"}]\n')
    assert frames == [b'[{"jsonrpc":"2.0"}]']
    assert reader.framing == "ndjson"


async def test_ndjson_tolerates_crlf_blank_lines_and_indentation() -> None:
    data = b"\r\n\n   \r\n  " + REQ + b"\r\n\r\n\n" + NOTE + b"\r\n"
    frames, reader = await read_all(data)
    assert frames == [REQ, NOTE]
    assert reader.framing == "ndjson"


async def test_ndjson_last_line_without_newline_is_read() -> None:
    frames, _ = await read_all(REQ + b"\n" + NOTE)
    assert frames == [REQ, NOTE]


async def test_ndjson_keeps_its_framing_for_later_lines() -> None:
    """Once NDJSON, a bad line is a body for the parser to reject (-32700), not a new mode."""
    frames, reader = await read_all(REQ + b"\nnot json\n" + NOTE + b"\n")
    assert frames == [REQ, b"not json", NOTE]
    assert reader.framing == "ndjson"


async def test_ndjson_line_of_70_kib() -> None:
    """ACP python-sdk's test_stdio_limits: lines over asyncio's 64 KiB default must work."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"t": "é" * 36_000}},
        ensure_ascii=False,
    ).encode()
    assert len(body) > 70 * 1024
    frames, _ = await read_all(body + b"\n" + NOTE + b"\n")
    assert frames == [body, NOTE]


async def test_line_over_the_stream_limit_is_an_error_and_reading_goes_on() -> None:
    data = REQ + b"\n" + b'{"big": "' + b"z" * 1000 + b'"}\n' + NOTE + b"\n"
    frames, _ = await read_all(data, max_frame=256)
    assert frames[0] == REQ
    assert isinstance(frames[1], FrameError)
    assert "too long" in frames[1].message
    assert frames[2:] == [NOTE]


async def test_empty_input_is_end_of_input() -> None:
    frames, reader = await read_all(b"")
    assert frames == []
    assert reader.framing is None


# --- writing --------------------------------------------------------------------------------


async def test_encode_frame_counts_bytes_not_characters() -> None:
    body = json.dumps({"text": "héllo wörld 🎉 日本"}, ensure_ascii=False).encode()
    assert len(body) != len(body.decode())
    frame = encode_frame(body, "lsp")
    header, _, payload = frame.partition(b"\r\n\r\n")
    assert header == b"Content-Length: %d" % len(body)
    assert payload == body

    frames, _ = await read_all(frame + encode_frame(REQ, "lsp"))
    assert frames == [body, REQ]


async def test_encode_ndjson_round_trip() -> None:
    body = json.dumps({"text": "ünï"}, ensure_ascii=False).encode()
    assert encode_frame(body, "ndjson") == body + b"\n"
    frames, _ = await read_all(encode_frame(body, "ndjson") + encode_frame(REQ, "ndjson"))
    assert frames == [body, REQ]


async def test_frames_split_across_reads() -> None:
    """Pipes deliver arbitrary chunks; a frame split byte by byte still reads whole."""
    data = lsp(REQ) + lsp(NOTE)
    stream = make_reader(b"", eof=False)
    reader = FrameReader(stream)

    async def read_three() -> list[bytes | FrameError | None]:
        return [await reader.read() for _ in range(3)]

    task = asyncio.create_task(read_three())
    for i in range(len(data)):
        stream.feed_data(data[i : i + 1])
        await asyncio.sleep(0)
    stream.feed_eof()
    assert await task == [REQ, NOTE, None]


# --- resync after a bad frame (issue 8.8) ---------------------------------------------------


@pytest.mark.parametrize("case", BAD_FRAME_CASES, ids=lambda case: case.name)
async def test_the_frame_after_a_bad_one_is_read(case: BadFrame) -> None:
    """Each bad input is written, then a good frame; the reader must deliver the good one."""
    stream = make_reader(b"", eof=False)
    reader = FrameReader(stream, max_frame_bytes=1 << 20)
    writes = list(case.writes)
    if case.glued:
        writes[-1] += lsp(REQ)
    else:
        writes.append(lsp(REQ))
    seen: list[bytes | FrameError | None] = []

    async def read_until_good() -> None:
        while (frame := await reader.read()) != REQ:
            assert frame is not None, "end of input before the good frame"
            seen.append(frame)

    task = asyncio.create_task(read_until_good())
    for chunk in writes:
        stream.feed_data(chunk)
        for _ in range(5):
            await asyncio.sleep(0)
    await asyncio.wait_for(task, 2)
    assert all(isinstance(frame, FrameError) or frame != REQ for frame in seen)
    # ... and the stream stays aligned: the frame after it is read too.
    stream.feed_data(lsp(NOTE))
    assert await asyncio.wait_for(reader.read(), 2) == NOTE


@pytest.mark.parametrize("case", BAD_FRAME_CASES, ids=lambda case: case.name)
async def test_bad_frames_split_byte_by_byte_still_resync(case: BadFrame) -> None:
    data = b"".join(case.writes) + lsp(REQ) + lsp(NOTE)
    stream = make_reader(b"", eof=False)
    reader = FrameReader(stream, max_frame_bytes=1 << 20)

    async def read_good() -> list[bytes]:
        good: list[bytes] = []
        while len(good) < 2:
            frame = await reader.read()
            assert frame is not None
            if frame in (REQ, NOTE):
                good.append(frame)
        return good

    task = asyncio.create_task(read_good())
    for i in range(len(data)):
        stream.feed_data(data[i : i + 1])
        await asyncio.sleep(0)
    assert await asyncio.wait_for(task, 2) == [REQ, NOTE]


async def test_duplicated_content_length_with_equal_values_is_accepted() -> None:
    data = b"Content-Length: %d\r\ncontent-length: %d\r\n\r\n%s" % (len(REQ), len(REQ), REQ)
    frames, _ = await read_all(data + lsp(NOTE))
    assert frames == [REQ, NOTE]


async def test_a_body_that_mentions_content_length_in_a_string_is_not_cut() -> None:
    """Only a raw newline ends a header line, and JSON strings cannot hold one."""
    body = b'{"text": "Content-Length: 5\\r\\n\\r\\nx", "more": "content-length:9"}'
    frames, _ = await read_all(lsp(body) + lsp(REQ))
    assert frames == [body, REQ]


async def test_skipped_garbage_is_bounded_in_memory() -> None:
    stream = make_reader(b"", eof=False)
    reader = FrameReader(stream)
    task = asyncio.create_task(reader.read())
    for _ in range(200):
        stream.feed_data(b"x" * 65536)
        await asyncio.sleep(0)
    assert len(reader._buf) < 1 << 20
    stream.feed_data(lsp(REQ))
    error = await asyncio.wait_for(task, 2)
    assert isinstance(error, FrameError) and "13107200 bytes" in error.message
    assert await asyncio.wait_for(reader.read(), 2) == REQ


async def test_ndjson_stray_bytes_glued_to_a_message_are_split_off() -> None:
    frames, _ = await read_all(REQ + b"\n" + b"stray bytes" + NOTE + b"\n", "ndjson")
    assert frames[0] == REQ
    assert isinstance(frames[1], FrameError)
    assert frames[2] == NOTE


async def test_a_header_mentioned_in_the_rest_of_a_cut_body_is_not_taken_for_one() -> None:
    """A too-small length leaves the body's tail, which may say "content-length:" in a string."""
    body = b'{"jsonrpc":"2.0","method":"x","params":{"t":"Content-Length: 5\\r\\n\\r\\nabc"}}'
    data = b"Content-Length: 20\r\n\r\n" + body + lsp(REQ)
    frames, _ = await read_all(data)
    assert frames[-1] == REQ
    assert all(isinstance(frame, FrameError) or frame == body[:20] for frame in frames[:-1])
