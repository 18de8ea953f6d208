"""The project's server under hostile requests (issue 48, item 3): the figures docs/llm-runs.md quotes.

Starts ``python -m cogtestbed.llm_adapters.servers.server`` as a separate process on 127.0.0.1 (nothing
calls a hosted API) and, while one client's generation is in flight:

1. sends the requests issue 48 found harmful or silently mis-served (chat ``top_logprobs: 100000``
   with ``max_tokens: 200``, ``top_logprobs: -3``, ``n: 3``, an empty prompt, an unknown role) and
   prints each one's status and latency;
2. floods the server with ``--flood`` concurrent requests asking 20 alternatives per token and the
   most tokens allowed (4096), and prints how many were served, refused as busy (429/503), and the
   server's peak resident memory (``/proc/PID/status``) against its memory after start-up.

    PYTHONPATH=. python benchmarks/studies/server_limits.py                       # tiny-random-chat
    PYTHONPATH=. python benchmarks/studies/server_limits.py --model smollm2-135m  # SmolLM2-135M
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(url: str, path: str, body: dict[str, Any], timeout: float = 600) -> tuple[int, float]:
    import httpx

    t0 = time.monotonic()
    resp = httpx.post(f"{url}/{path}", json=body, timeout=timeout)
    return resp.status_code, time.monotonic() - t0


def main() -> None:
    import httpx

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default="tiny-random-chat")
    parser.add_argument("--flood", type=int, default=24, help="concurrent requests of the flood")
    parser.add_argument("--max-seconds", type=float, default=5.0, help="the server's --max-seconds")
    parser.add_argument("--max-queue", type=int, default=4, help="the server's --max-queue")
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    proc = subprocess.Popen([sys.executable, "-m", "cogtestbed.llm_adapters.servers.server", "--model", args.model,
                             "--port", str(port), "--max-seconds", str(args.max_seconds),
                             "--max-queue", str(args.max_queue)], env=os.environ.copy(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # its access log
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the server did not start")
            time.sleep(0.5)
        hi = [{"role": "user", "content": "Tell me a long story about a cat."}]
        post(url, "chat/completions", {"model": args.model, "messages": hi, "max_tokens": 4})  # warm-up
        started_mb = rss_mb(proc.pid)

        # 1. hostile requests while another client's generation is in flight
        other: dict[str, Any] = {}
        long = threading.Thread(target=lambda: other.update(r=post(url, "chat/completions", {
            "model": args.model, "messages": hi, "max_tokens": 4096, "temperature": 1, "seed": 1})))
        long.start()
        time.sleep(0.5)
        hostile = {
            "chat top_logprobs=100000, max_tokens=200": ("chat/completions", {
                "model": args.model, "messages": hi, "logprobs": True, "top_logprobs": 100000, "max_tokens": 200}),
            "chat top_logprobs=-3": ("chat/completions", {"model": args.model, "messages": hi, "logprobs": True,
                                                          "top_logprobs": -3}),
            "chat n=3": ("chat/completions", {"model": args.model, "messages": hi, "n": 3}),
            "completions prompt=''": ("completions", {"model": args.model, "prompt": ""}),
            "chat role=wizard": ("chat/completions", {"model": args.model,
                                                      "messages": [{"role": "wizard", "content": "hi"}]}),
        }
        print("| request (sent while another client's generation runs) | status | seconds |")
        print("|---|---|---|")
        for name, (path, body) in hostile.items():
            status, seconds = post(url, path, body, timeout=30)
            print(f"| {name} | {status} | {seconds:.3f} |")
        long.join()
        print(f"| the other client's generation (max_tokens 4096, --max-seconds {args.max_seconds:g}) | "
              f"{other['r'][0]} | {other['r'][1]:.1f} |")

        # 2. a flood of the largest logprob requests allowed
        peak, done = started_mb, threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, rss_mb(proc.pid))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        statuses: list[int] = []
        t0 = time.monotonic()
        flood = [threading.Thread(target=lambda s=s: statuses.append(post(url, "chat/completions", {
            "model": args.model, "messages": hi, "logprobs": True, "top_logprobs": 20, "max_tokens": 4096,
            "temperature": 1, "seed": s})[0])) for s in range(args.flood)]
        for t in flood:
            t.start()
        for t in flood:
            t.join()
        wall = time.monotonic() - t0
        done.set()
        sampler.join()
        counts = {str(s): statuses.count(s) for s in sorted(set(statuses))}
        print()
        print(json.dumps({"model": args.model, "flood": args.flood, "max_queue": args.max_queue,
                          "statuses": counts, "flood_wall_s": round(wall, 1),
                          "rss_after_start_mb": round(started_mb), "rss_peak_mb": round(peak),
                          "rss_end_mb": round(rss_mb(proc.pid))}))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
