"""parties' JSON log (--log FILE) read as the daemon writes it, for the tests' waits.

    from ptlog import follow, records
    for r in follow(path, timeout_s):   # each interval's record, summaries left out
        w = {x['name']: x for x in r['wl']}
    for r in records(path, t0, t1):     # those written so far with t0 < t <= t1

A record is taken only once its line is whole (ends with '}'): the daemon may be
mid-write. The file may not exist yet (the daemon starting). Ends after timeout_s of
wall time; a caller that found what it waited for returns from inside the loop.
"""
import json
import time


def follow(path, timeout_s, poll_s=0.1):
    end = time.time() + timeout_s
    seen = 0
    while time.time() < end:
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            lines = []
        for line in lines[seen:]:
            if not line.endswith('}'):
                break
            seen += 1
            r = json.loads(line)
            if not r.get('summary'):
                yield r
        time.sleep(poll_s)


def records(path, t0=float('-inf'), t1=float('inf')):
    """The records written so far (whole lines, summaries left out) with t0 < t <= t1."""
    with open(path) as f:
        for line in f:
            if not line.endswith('}\n'):
                continue
            r = json.loads(line)
            if not r.get('summary') and t0 < r['t'] <= t1:
                yield r
