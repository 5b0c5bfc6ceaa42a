#!/usr/bin/env python3
"""A gRPC server and client on Python's grpcio (Debian's python3-grpcio), no generated
code: one unary method /ebee.Sleep/Call whose request is the delay in ms as ASCII and
whose reply is the same bytes, after the server slept that long.

  grpc_py.py server PORT_FILE [WORKERS]   listen on 127.0.0.1:0, write the port
  grpc_py.py client PORT N CONC DELAYS    N calls on ONE channel (one HTTP/2
                                          connection), CONC in flight, the delays
                                          (ms, comma-separated) in turn

The client prints one JSON line: calls, ok, failed, and the p50 and p90 of each call's
latency as it measured it (us)."""
import json, os, sys, threading, time
from concurrent import futures

import grpc

METHOD = "/ebee.Sleep/Call"


def serve(port_file, workers):
    def call(req, ctx):
        time.sleep(int(req) / 1000.0)
        return req

    handler = grpc.method_handlers_generic_handler(
        "ebee.Sleep", {"Call": grpc.unary_unary_rpc_method_handler(call)})
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                      handlers=[handler])
    port = srv.add_insecure_port("127.0.0.1:0")
    srv.start()
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(port_file + ".tmp", port_file)
    srv.wait_for_termination()


def client(port, n, conc, delays):
    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    grpc.channel_ready_future(ch).result(timeout=10)
    stub = ch.unary_unary(METHOD)
    lat, res, lock = [], {"ok": 0, "failed": 0}, threading.Lock()
    sem = threading.Semaphore(conc)
    done = threading.Event()
    left = [n]

    def finish(fut, t0, want):
        dt = time.monotonic() - t0
        ok = False
        try:
            ok = fut.result() == want
        except grpc.RpcError:
            pass
        with lock:
            res["ok" if ok else "failed"] += 1
            if ok:
                lat.append(dt * 1e6)
            left[0] -= 1
            if not left[0]:
                done.set()
        sem.release()

    for i in range(n):
        sem.acquire()
        want = str(delays[i % len(delays)]).encode()
        t0 = time.monotonic()
        fut = stub.future(want, timeout=30)
        fut.add_done_callback(lambda f, t0=t0, want=want: finish(f, t0, want))
    done.wait(60)
    ch.close()
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0
    print(json.dumps({"calls": n, "ok": res["ok"], "failed": res["failed"],
                      "p50_us": pct(0.5), "p90_us": pct(0.9)}))


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 16)
    else:
        client(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
               [int(d) for d in sys.argv[5].split(",")])
