"""Load test of ``zstc serve`` on loopback: does batching across requests pay, and does the server hold up?

Starts the server in a subprocess on 127.0.0.1 (all-MiniLM-L6-v2 as an embedding model, or the same
encoder with a fresh, seeded 3-way NLI head as the cross-encoder), then sends the same requests twice: one
at a time, and from ``--clients`` concurrent clients. Each request has 1-8 banking77 texts and 4-20 of the
77 banking intents as labels (``This text is about {}.``), drawn with a fixed seed. The two modes run
alternately on chunks of the requests, so that load from other processes on a shared machine falls on both
alike. Bounded in count (``--requests``) and time (``--time-limit``: it stops after the chunk that passes it
and reports what it did).

    python benchmarks/serve_load.py --family nli [--requests 1000] [--clients 32] [--data ../shared/data/btzsc]
    python benchmarks/serve_load.py --family embedding
    python benchmarks/serve_load.py --family nli --overload      # small queue: 429s with Retry-After, no 5xx
    python benchmarks/serve_load.py --family nli --ceiling 200   # what batching gives the model itself, without HTTP

The fresh NLI head barely tells labels apart, so in bf16 every pair would be a near tie that the scorer rescores
in fp32 (``--recheck-margin``, zstc.scorers.pairs): the NLI server therefore runs with ``--recheck-margin 0``,
so that this measures batching, not a recheck that a trained model needs for ~2% of its pairs
(``--server-arg=--recheck-margin=0.1`` measures it anyway; the last occurrence of a flag wins).

``--ceiling N`` also scores the first N requests in this process, with the server's scorer and no HTTP: each
request alone, then all of them as the engine would batch them (``max_batch_pairs`` pairs per call). Their
ratio is what batching across requests gives the model itself on this machine. ``throughput_ratio`` can pass
it: one request at a time over HTTP also waits for that request's HTTP, JSON and tokenizing work, which
concurrent clients overlap with the model's (measured on 200 NLI requests: 1.37x in-process, 1.65 over HTTP).

Last line: ``requests=N errors=<non-2xx other than 429, and failed connections> p50_ms=... p95_ms=...
throughput_ratio=<texts/s with concurrent clients / texts/s one at a time> rss_growth_mb=<server RSS after the
run minus after warm-up>`` (latencies from the concurrent mode). Warm-up ends with ``2 x --clients`` requests
sent concurrently, so that the growth counts what creeps, not the working set of the largest batches (reached
once, then reused); the RSS after the small warm-up and after each chunk is printed beside it. With ``--overload``: ``overload: requests=N
ok=... overloaded=... retry_after=<429s that carried Retry-After> server_errors=<5xx> errors=...``.

The two lines before the last give each mode's fraction of the machine's matmul peak in the server's precision
(``hardware.py``): the FLOPs of the requests' forward passes over the mode's whole time, HTTP and queueing
included. ``--overload`` measures refusals, not speed, and prints none.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil
from hardware import peak_line, peaks_around
from options import Parser, non_negative_int, positive_float, positive_int

REPO = Path(__file__).resolve().parents[1]
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
FALLBACK_TEXTS = [
    "I still have not received my new card.",
    "Why was I charged twice for one purchase?",
    "How do I change my PIN?",
    "My transfer to a friend has not arrived yet.",
    "Can I top up with a cheque?",
    "The exchange rate on my payment looks wrong.",
    "I want to close my account.",
    "Where can I use this card?",
]
FALLBACK_LABELS = [
    "card arrival",
    "card payment fee charged",
    "change pin",
    "transfer not received by recipient",
    "top up by cash or cheque",
    "exchange rate",
    "terminate account",
    "card acceptance",
    "lost or stolen card",
    "refund not showing up",
    "pending transfer",
    "declined card payment",
]


def load_pool(data: Path) -> tuple[list[str], list[str]]:
    """banking77's texts and intents (underscores as spaces), or a small built-in pool without the data."""
    path = data / "banking77.jsonl"
    if not path.exists():
        print(f"note: {path} not found; using a built-in pool of {len(FALLBACK_TEXTS)} texts", file=sys.stderr)
        return FALLBACK_TEXTS, FALLBACK_LABELS
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    return [r["text"] for r in rows], sorted({r["label_text"].replace("_", " ").lower() for r in rows})


def make_requests(n: int, texts: list[str], labels: list[str], seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "texts": rng.sample(texts, rng.randint(1, 8)),
            "labels": rng.sample(labels, rng.randint(4, min(20, len(labels)))),
            "template": "This text is about {}.",
        }
        for _ in range(n)
    ]


# -- the server ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def build_model(family: str, folder: Path) -> tuple[str, str]:
    if family == "embedding":
        return MINILM, "embedding"
    sys.path.insert(0, str(REPO / "benchmarks"))
    from nli_vs_pipeline import fresh_head_model

    return str(fresh_head_model(folder)), "nli"


def served_flops(model: str, family: str, requests: list[dict[str, Any]]) -> float:
    """FLOPs of the forward passes these requests need (``hardware.encoder_flops``, real tokens): NLI, every
    (text, filled-in label) pair; embedding, every text once (the server caches label embeddings across requests,
    so they count as time, not as work)."""
    from hardware import embedding_flops, encoder_flops
    from nli_vs_pipeline import pair_lengths, pipeline_model

    if family == "nli":
        network, tokenizer = pipeline_model(model)
        pairs = [(text, r["template"].format(label)) for r in requests for text in r["texts"] for label in r["labels"]]
        return encoder_flops(network, pair_lengths(tokenizer, pairs))
    return embedding_flops(model, [text for r in requests for text in r["texts"]])


def start_server(model: str, family: str, port: int, extra: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    command = [
        sys.executable,
        "-m",
        "zstc",
        "serve",
        "--model",
        model,
        "--family",
        family,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-access-log",
        *extra,
    ]
    return subprocess.Popen(command, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def wait_ready(base: str, server: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with status {server.returncode}")
        try:
            if httpx.get(f"{base}/health/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the server was not ready within {timeout:.0f} s")


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


# -- the clients -----------------------------------------------------------------------------------------------


async def send_all(
    client: httpx.AsyncClient, url: str, requests: list[dict[str, Any]], concurrency: int, deadline: float
) -> list[tuple[int, float, bool]]:
    """(status, seconds, has Retry-After) per request; status 0 for a failed connection or timeout."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)
    outcomes: list[tuple[int, float, bool]] = []

    async def worker() -> None:
        while not queue.empty() and time.monotonic() < deadline:
            request = queue.get_nowait()
            started = time.perf_counter()
            try:
                response = await client.post(url, json=request)
                outcomes.append(
                    (response.status_code, time.perf_counter() - started, "retry-after" in response.headers)
                )
            except httpx.HTTPError:
                outcomes.append((0, time.perf_counter() - started, False))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return outcomes


async def compare(
    base: str, requests: list[dict[str, Any]], clients: int, chunk: int, time_limit: float, server_rss: Any
) -> dict[str, Any]:
    deadline = time.monotonic() + time_limit
    totals = {"one": [0, 0.0], "many": [0, 0.0]}  # texts, seconds
    outcomes: dict[str, list[tuple[int, float, bool]]] = {"one": [], "many": []}
    done = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(600.0)) as client:
        for index, start in enumerate(range(0, len(requests), chunk)):
            part = requests[start : start + chunk]
            order = [("one", 1), ("many", clients)] if index % 2 == 0 else [("many", clients), ("one", 1)]
            for mode, concurrency in order:
                started = time.perf_counter()
                result = await send_all(client, f"{base}/classify", part, concurrency, deadline=float("inf"))
                totals[mode][1] += time.perf_counter() - started
                totals[mode][0] += sum(len(r["texts"]) for r in part)
                outcomes[mode] += result
            done += len(part)
            print(
                f"  {done} requests: one at a time {totals['one'][0] / totals['one'][1]:.1f} texts/s, "
                f"{clients} clients {totals['many'][0] / totals['many'][1]:.1f} texts/s, server RSS {server_rss():.0f} MB",
                file=sys.stderr,
                flush=True,
            )
            if time.monotonic() > deadline:
                print(f"  time limit of {time_limit:.0f} s reached after {done} requests", file=sys.stderr)
                break
    return {"done": done, "totals": totals, "outcomes": outcomes}


async def overload(
    base: str, requests: list[dict[str, Any]], clients: int, time_limit: float
) -> list[tuple[int, float, bool]]:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(600.0)) as client:
        return await send_all(client, f"{base}/classify", requests, clients, deadline=time.monotonic() + time_limit)


def ceiling(
    model: str,
    family: str,
    requests: list[dict[str, Any]],
    precision: str,
    max_batch_pairs: int,
    recheck_margin: float | None = None,
) -> float:
    """texts/s with the requests' pairs batched as the engine batches them over texts/s with each alone (no HTTP).

    The two modes alternate over chunks of requests, as in :func:`compare`, so other load falls on both alike.
    The kernel caches are bounded as ``zstc serve`` bounds them, before this process's first forward pass.
    """
    from zstc.scorers import make_scorer
    from zstc.server.engine import bound_kernel_caches

    bound_kernel_caches()

    options = {"recheck_margin": recheck_margin} if recheck_margin is not None else {}  # as the server runs it (/info)
    scorer = make_scorer(model, family=family, precision=precision, **options)
    template = requests[0]["template"]

    def pairs(batch: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
        firsts = [text for r in batch for text in r["texts"] for _ in r["labels"]]
        seconds = [template.format(label) for r in batch for _ in r["texts"] for label in r["labels"]]
        return firsts, seconds

    def run(groups: list[list[dict[str, Any]]]) -> float:
        started = time.perf_counter()
        for group in groups:
            scorer.score_pairs(*pairs(group))
        return time.perf_counter() - started

    scorer.score(requests[0]["texts"], requests[0]["labels"])  # load and warm up
    alone = together = 0.0
    for start in range(0, len(requests), 50):
        chunk = requests[start : start + 50]
        groups, size = [[]], 0
        for r in chunk:  # the engine's rule: take requests until the next would pass the budget
            n = len(r["texts"]) * len(r["labels"])
            if groups[-1] and size + n > max_batch_pairs:
                groups.append([])
                size = 0
            groups[-1].append(r)
            size += n
        alone += run([[r] for r in chunk])
        together += run(groups)
    return alone / together


def idle_rss_mb(pid: int, settle_s: float = 2.0) -> float:
    """The server's RSS once it is idle: the last batch's activations are freed and handed back (the engine
    trims its heap when the model thread has nothing queued), so the reading is what stays, not a peak."""
    time.sleep(settle_s)
    return rss_mb(pid)


def rss_mb(pid: int) -> float:
    process = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)]) / 2**20


def main() -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", choices=["nli", "embedding"], default="nli")
    parser.add_argument("--requests", type=positive_int, default=1000)
    parser.add_argument("--clients", type=positive_int, default=32)
    parser.add_argument("--chunk", type=positive_int, default=200, help="Requests per alternation of the two modes.")
    parser.add_argument(
        "--time-limit",
        type=positive_float,
        default=1800,
        help="Seconds of sending, at most (checked after each chunk).",
    )
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "btzsc")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--overload", action="store_true", help="A small queue (--max-queued-pairs 256) and twice the clients."
    )
    parser.add_argument(
        "--server-arg", action="append", default=[], help="Passed to zstc serve, e.g. --server-arg=--threads=2."
    )
    parser.add_argument(
        "--ceiling",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="Also score the first N requests in-process, alone and batched: the most batching can give.",
    )
    args = parser.parse_args()
    if args.ceiling and args.family != "nli":
        parser.error(
            "--ceiling measures the cross-encoder path (pairs batched across requests): use it with --family nli"
        )

    texts, labels = load_pool(args.data)
    requests = make_requests(args.requests, texts, labels, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        model, family = build_model(args.family, Path(tmp) / "model")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        extra = ["--max-queued-pairs", "256"] if args.overload else []
        if family == "nli":  # see the module docstring: a random head makes every pair a near tie
            extra += ["--recheck-margin", "0"]
        log = Path(tmp) / "server.log"
        server = start_server(model, family, port, [*extra, *args.server_arg], log)
        try:
            wait_ready(base, server, timeout=600)
            info = httpx.get(f"{base}/info", timeout=60).json()
            print(
                f"server: {info['model']} ({info['family']}), precision {info['scorer'].get('precision')}, "
                f"torch threads in the model thread {info['batching']['torch_threads']}, "
                f"max_batch_pairs {info['batching']['max_batch_pairs']}, max_wait_ms {info['batching']['max_wait_ms']}",
                file=sys.stderr,
            )
            # Warm-up in two steps: a few small requests (the model's first passes), then as many requests as
            # the concurrent clients send at once, so that the engine has formed its largest batches. RSS growth
            # is counted from there: a leak or a creeping heap shows up in it, the working set of a full batch
            # (reached once, then reused) does not. Both figures are printed.
            asyncio.run(overload(base, make_requests(8, texts, labels, args.seed + 1), 4, time_limit=300))
            rss_light = idle_rss_mb(server.pid)
            asyncio.run(
                overload(
                    base, make_requests(2 * args.clients, texts, labels, args.seed + 2), args.clients, time_limit=600
                )
            )
            rss_before = idle_rss_mb(server.pid)
            print(
                f"server RSS {rss_light:.0f} MB after 8 small requests, {rss_before:.0f} MB after {2 * args.clients} "
                f"requests from {args.clients} clients (the working set of full batches)",
                file=sys.stderr,
            )
            if args.overload:
                outcomes = asyncio.run(overload(base, requests, 2 * args.clients, args.time_limit))
                statuses = [status for status, _, _ in outcomes]
                print(
                    f"overload: requests={len(outcomes)} ok={sum(s == 200 for s in statuses)} "
                    f"overloaded={sum(s == 429 for s in statuses)} "
                    f"retry_after={sum(s == 429 and has for s, _, has in outcomes)} "
                    f"server_errors={sum(s >= 500 for s in statuses)} "
                    f"errors={sum(s != 429 and not 200 <= s < 300 for s in statuses)}"
                )
                return
            # Peaks measured here while the server idles, before and after: its model thread uses as many torch
            # threads as this process (both torch's default unless --server-arg sets --threads).
            result, peaks = peaks_around(
                lambda: asyncio.run(
                    compare(base, requests, args.clients, args.chunk, args.time_limit, lambda: idle_rss_mb(server.pid))
                )
            )
            rss_after = idle_rss_mb(server.pid)
        finally:
            stop_server(server)
            if server.returncode not in (0, None, 143, -signal.SIGTERM):
                print(log.read_text()[-3000:], file=sys.stderr)
        flops = served_flops(model, family, requests[: result["done"]])
        if args.ceiling:
            bound = ceiling(
                model,
                family,
                requests[: args.ceiling],
                info["scorer"].get("precision", "fp32"),
                info["batching"]["max_batch_pairs"],
                info["scorer"].get("recheck_margin"),
            )
            print(
                f"ceiling: {min(args.ceiling, len(requests))} requests scored in-process, batched as the engine batches "
                f"them over one at a time: {bound:.2f}x (the model's own gain; over HTTP, overlapped request work comes on top)"
            )
    outcomes_all = result["outcomes"]["one"] + result["outcomes"]["many"]
    errors = sum(status != 429 and not 200 <= status < 300 for status, _, _ in outcomes_all)
    latencies = np.array([seconds for status, seconds, _ in result["outcomes"]["many"] if 200 <= status < 300]) * 1000
    one, many = result["totals"]["one"], result["totals"]["many"]
    ratio = (many[0] / many[1]) / (one[0] / one[1])
    p50, p95 = np.percentile(latencies, [50, 95]) if len(latencies) else (float("nan"), float("nan"))
    print(
        f"{args.family}: one at a time {one[0] / one[1]:.1f} texts/s, {args.clients} clients {many[0] / many[1]:.1f} texts/s; "
        f"server RSS {rss_before:.0f} MB after warm-up, {rss_after:.0f} MB after the run"
    )
    # Over HTTP: the time includes HTTP, JSON, tokenizing and queueing, so this is what the service reached of the peak.
    precision = info["scorer"].get("precision", "fp32")
    print(peak_line("one at a time peak fraction", flops, one[1], peaks, precision))
    print(peak_line(f"{args.clients} clients peak fraction", flops, many[1], peaks, precision))
    print(
        f"requests={result['done']} errors={errors} p50_ms={p50:.0f} p95_ms={p95:.0f} throughput_ratio={ratio:.2f} "
        f"rss_growth_mb={rss_after - rss_before:.0f}"
    )


if __name__ == "__main__":
    main()
