"""MCAP files Nerve writes, checked by Foxglove's own Python `mcap` package the way the `mcap doctor` command
checks them: every chunk's CRC and the data section's, the chunk indexes pointing at the chunks they describe (time
range, compression, sizes), the message indexes listing exactly the messages of their chunk, and the statistics
counting every message. For exports compressed with zstd and with lz4, and for a recording (`nerve log run.mcap`
is the same writer as `nerve export --to mcap --encoding lcm`). When the Go `mcap` CLI is installed (.venv/bin/mcap,
by scripts/setup where the Go module proxy serves it) its `doctor` runs too."""

import collections
import io
import shutil
import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "types"


def write_log(venv_python, path: Path):
    script = """
import sys, lcm, struct
log = lcm.EventLog(sys.argv[1], "w", overwrite=True)
fp = bytes.fromhex("18f48ab44e6fd954")   # exlcm.laser_t's fingerprint
for i in range(5000):
    body = struct.pack(">qi", i, 3) + struct.pack(">3f", 0.5 * i, 1.0, 2.0) + struct.pack(">ff", -1.5, 0.25)
    log.write_event(1_700_000_000_000_000 + 1000 * i, "LASER" if i % 2 else "SCAN", fp + body)
    if i % 500 == 0:
        log.write_event(1_700_000_000_000_000 + 1000 * i + 1, "RAW", bytes(range(256)) * 100)
"""
    subprocess.run([str(venv_python), "-c", script, str(path)], check=True)


def doctor(path: Path, compression: str, encoding: str):
    from mcap.records import Chunk, ChunkIndex, MessageIndex, Statistics
    from mcap.stream_reader import StreamReader, get_chunk_data_stream

    data = path.read_bytes()
    records = list(StreamReader(io.BytesIO(data), emit_chunks=True, validate_crcs=True).records)
    chunks = {}
    offset = 8
    # Walk the data section by hand to know each record's offset (the chunk indexes point at offsets).
    while offset < len(data) - 8:
        op = data[offset]
        length = int.from_bytes(data[offset + 1:offset + 9], "little")
        if op == 0x06:
            chunks[offset] = length + 9
        offset += 9 + length
    assert offset == len(data) - 8, "records end at the trailing magic"
    indexes = [r for r in records if isinstance(r, ChunkIndex)]
    stats = [r for r in records if isinstance(r, Statistics)]
    assert len(stats) == 1 and indexes, "statistics and chunk indexes in the summary"
    total = 0
    per_channel = collections.Counter()
    for ci in indexes:
        assert ci.chunk_start_offset in chunks and ci.chunk_length == chunks[ci.chunk_start_offset]
        assert ci.compression == compression
        chunk = next(StreamReader(io.BytesIO(data[ci.chunk_start_offset:ci.chunk_start_offset + ci.chunk_length]),
                                  skip_magic=True, emit_chunks=True, validate_crcs=True).records)
        assert isinstance(chunk, Chunk) and chunk.compression == compression
        assert (chunk.message_start_time, chunk.message_end_time) == (ci.message_start_time, ci.message_end_time)
        stream, size = get_chunk_data_stream(chunk, validate_crc=True)
        raw = stream.read(size)
        assert len(raw) == chunk.uncompressed_size
        offsets, pos = set(), 0
        while pos < len(raw):
            op, length = raw[pos], int.from_bytes(raw[pos + 1:pos + 9], "little")
            if op == 0x05:
                offsets.add(pos)
            pos += 9 + length
        assert pos == len(raw), "the chunk's records fill it exactly"
        messages = sorted(offsets)
        listed = 0
        for channel_id, at in ci.message_index_offsets.items():
            mi = next(StreamReader(io.BytesIO(data[at:]), skip_magic=True).records)
            assert isinstance(mi, MessageIndex) and mi.channel_id == channel_id
            for _, off in mi.records:
                assert off in offsets
            listed += len(mi.records)
            per_channel[channel_id] += len(mi.records)
        assert listed == len(messages), "message indexes list every message of their chunk"
        total += len(messages)
    assert stats[0].message_count == total
    assert dict(stats[0].channel_message_counts) == dict(per_channel)
    from mcap.reader import make_reader
    with open(path, "rb") as f:
        got = list(make_reader(f).iter_messages())
    assert len(got) == total and all(c.message_encoding == encoding for _, c, _ in got)
    cli = shutil.which("mcap", path=str(Path(__file__).resolve().parents[2] / ".venv" / "bin"))
    if cli:
        res = subprocess.run([cli, "doctor", str(path)], capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
    return got


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_exports_and_recordings_pass_the_checks_of_mcap_doctor(nerve_bin, venv_python, tmp_path, compression):
    log = tmp_path / "laser.lcmlog"
    write_log(venv_python, log)
    for encoding in ["json", "lcm"]:
        out = tmp_path / f"{encoding}.mcap"
        res = subprocess.run([str(nerve_bin), "export", str(log), "--to", "mcap", "--encoding", encoding,
                              "--compression", compression, "--types", str(EXAMPLES), "-o", str(out), "-q"],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        got = doctor(out, compression, encoding)
        assert len(got) == 5010
        schema, channel, message = got[2]
        assert channel.topic == "LASER" and schema.name == "exlcm.laser_t"
        if encoding == "lcm":
            assert schema.encoding == "lcm" and b"struct exlcm.laser_t" in schema.data
            assert message.data[:8] == bytes.fromhex("18f48ab44e6fd954")
        else:
            assert schema.encoding == "jsonschema" and message.data.startswith(b'{"utime":1,')
