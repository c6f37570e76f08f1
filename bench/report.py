"""Prints what bench/run.sh measured: every wrk figure with its ratios (to our /health,
to the twin's same endpoint, /health to the hello server), what the client tool saw, the
server's memory, and whether each target of issue 6 is met in this run.

    report.py compare|idle|attack RESULTS FACTS [CPU]

RESULTS has one line per wrk run (bench/wrk.lua):
    server|endpoint|req/s|p50 ms|p99 ms|requests|non-2xx|socket errors
FACTS has lines "group [phase] key=value ...": run.sh's (meta, ours, twin, big) and
bench/clients' own ("hold: ready ...", "slowloris: done ...").
CPU has one line per wrk run: server|endpoint|CPU clock ticks the server used|ticks per
second; the report divides them by the requests wrk counted (µs of CPU a request)."""
import sys

ENDPOINTS = [("health", "GET /health"), ("get", "GET a note"), ("list", "list 25 notes"), ("post", "POST a note"),
             ("counters", "task counters"), ("task_list", "tasks filtered"), ("task_post", "POST a task")]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def read_results(path):
    """One figure per (server, endpoint): over the rounds of the run (ROUNDS), the median
    of each of req/s, p50 and p99, and the sums of the counts."""
    runs = {}
    for line in open(path):
        f = line.strip().split("|")
        if len(f) == 8:
            runs.setdefault((f[0], f[1]), []).append(
                dict(rps=float(f[2]), p50=float(f[3]), p99=float(f[4]), n=int(f[5]), non2xx=int(f[6]),
                     errors=int(f[7])))
    out = {}
    for k, rs in runs.items():
        out[k] = {m: median([r[m] for r in rs]) for m in ("rps", "p50", "p99")}
        out[k].update({m: sum(r[m] for r in rs) for m in ("n", "non2xx", "errors")})
        out[k]["rounds"] = len(rs)
    return out


def add_cpu(res, path):
    """Adds "cpu_us": the server's CPU time over all rounds per request wrk counted."""
    ticks = {}
    for line in open(path):
        f = line.strip().split("|")
        if len(f) == 4:
            t = ticks.setdefault((f[0], f[1]), [0, float(f[3])])
            t[0] += int(f[2])
    for k, (n, hz) in ticks.items():
        if k in res and res[k]["n"]:
            res[k]["cpu_us"] = n / hz * 1e6 / res[k]["n"]


def read_facts(path):
    facts = {}
    for line in open(path):
        words = line.split()
        group = " ".join(w.rstrip(":") for w in words if "=" not in w)
        kv = facts.setdefault(group, {})
        for w in words:
            if "=" in w:
                k, v = w.split("=", 1)
                kv[k] = v
    return facts


def num(facts, group, key, default=0.0):
    try:
        return float(facts.get(group, {}).get(key, default))
    except ValueError:
        return default


def ms(v):
    return f"{v:.2f} ms" if v < 10 else f"{v:.1f} ms" if v < 100 else f"{v:.0f} ms"


def ratio(a, b):
    return "-" if not b else f"{a / b:.2f}" if a / b >= 0.1 else f"{a / b:.3f}"


def verdict(name, checks):
    """checks: (text, ok) pairs; one line per endpoint saying met or missed, and by how much."""
    missed = [t for t, ok in checks if not ok]
    word = "met" if not missed else "MISSED"
    print(f"  {name:<14} {word:<7} " + "; ".join(t for t, _ in checks))


def header(facts, wrk=True):
    m = facts.get("meta", {})
    rounds = f", the median of {m.get('rounds')} rounds" if wrk and m.get("rounds", "1") != "1" and m.get("mode") == "compare" else ""
    load = f"wrk -t{m.get('threads')} -c{m.get('connections')} -d{m.get('duration')} per figure{rounds}; " if wrk else ""
    print(f"\nactionstools {m.get('version', '?')} on {m.get('storage', '?')}, {m.get('cores', '?')} cores, {load}"
          f"load average {m.get('load_before', '?')} before, {m.get('load_after', '?')} after "
          "(a busy machine lowers every figure: compare ratios, not absolutes)")


def row(label, server, r, health=None, twin=None, extra=""):
    flags = []
    if r["non2xx"]:
        flags.append(f"{r['non2xx']} non-2xx")
    if r["errors"]:
        flags.append(f"{r['errors']} socket errors")
    p50, p99 = (ms(r["p50"]), ms(r["p99"])) if r["n"] else ("-", "-")
    cpu = f"{r['cpu_us']:.0f} µs" if "cpu_us" in r else "-"
    print(f"  {label:<14} {server:<13} {r['rps']:>9,.0f} {p50:>9} {p99:>9}"
          f" {ratio(r['rps'], health) if health else '':>9} {ratio(r['rps'], twin) if twin else '':>7} {cpu:>9}"
          f"  {extra}{'  ' + ', '.join(flags) if flags else ''}".rstrip())


def compare(res, facts):
    header(facts)
    m = facts.get("meta", {})
    has_twin = ("twin", "health") in res
    if has_twin:
        print(f"twin: Flask {m.get('flask')} + gunicorn {m.get('gunicorn')}, 5 sync workers, SQLite; "
              f"hello: libmicrohttpd {m.get('mhd')} epoll, 2 threads, a 200-byte answer")
    print(f"\n  {'endpoint':<14} {'server':<13} {'req/s':>9} {'p50':>9} {'p99':>9} {'×/health':>9} {'×twin':>7}"
          f" {'CPU/req':>9}")
    ours_health = res.get(("ours", "health"), {}).get("rps", 0)
    twin_health = res.get(("twin", "health"), {}).get("rps", 0)
    hello = res.get(("hello", "health"))
    if hello:
        row("hello", "hello", hello)
    for key, label in ENDPOINTS:
        ours, twin = res.get(("ours", key)), res.get(("twin", key))
        if ours:
            extra = f"× hello {ratio(ours['rps'], hello['rps'])}" if key == "health" and hello else ""
            row(label, "actionstools", ours, ours_health, twin["rps"] if twin else None, extra)
        if twin:
            row("", "twin", twin, twin_health)
    rss = facts.get("ours", {})
    print(f"\n  peak RSS (VmHWM) of actionstools over the measured runs: {rss.get('rss_hwm_mb', '?')} MB"
          f" (now {rss.get('rss_mb', '?')} MB)" +
          (f"; twin, master + 5 workers: {facts['twin'].get('rss_hwm_mb')} MB" if "twin" in facts else ""))
    cpu = [(label, res[("ours", k)]["cpu_us"], res[("twin", k)]["cpu_us"]) for k, label in ENDPOINTS
           if "cpu_us" in res.get(("ours", k), {}) and "cpu_us" in res.get(("twin", k), {})]
    if cpu:
        print("\n  CPU per request (the server's user + system time over the wrk runs ÷ requests; steadier than "
              "req/s on a shared machine):")
        hello_cpu = (hello or {}).get("cpu_us")
        for label, o, t in cpu:
            extra = f", hello {hello_cpu:.0f} µs" if hello_cpu and label == "GET /health" else ""
            print(f"    {label:<14} ours {o:>5.0f} µs, twin {t:>6.0f} µs: the twin spends {t / o:.1f}× as much{extra}")
    bad = [f"{s} {e}" for (s, e), r in res.items() if r["non2xx"] or r["errors"]]
    if bad:
        print(f"  WARNING: errors in {', '.join(bad)}: those figures are not comparable (see the wrk lines above)")
    if not has_twin:
        print("  (the hello server, the twin and the targets belong to the sqlite pass)")
        return
    o = {k: res.get(("ours", k)) for k, _ in ENDPOINTS[:4]}
    t = {k: res.get(("twin", k)) for k, _ in ENDPOINTS[:4]}
    if not all(o.values()) or not all(t.values()) or not hello:
        return
    r = lambda a, b: a["rps"] / b["rps"] if b["rps"] else 0.0
    print("\ntargets of issue 6 (ratios of this run):")
    verdict("GET /health", [(f"{r(o['health'], hello):.2f}× hello (≥ 0.8)", r(o["health"], hello) >= 0.8)])
    verdict("GET a note", [(f"{r(o['get'], o['health']):.2f}× /health (≥ 0.5)", r(o["get"], o["health"]) >= 0.5),
                           (f"{r(o['get'], t['get']):.1f}× twin (≥ 8)", r(o["get"], t["get"]) >= 8)])
    verdict("list 25 notes", [(f"{r(o['list'], o['health']):.2f}× /health (≥ 0.2)", r(o["list"], o["health"]) >= 0.2),
                              (f"{r(o['list'], t['list']):.1f}× twin (≥ 5)", r(o["list"], t["list"]) >= 5),
                              (f"p99 {ms(o['list']['p99'])} (≤ 10 ms)", o["list"]["p99"] <= 10)])
    verdict("POST a note", [(f"{o['post']['rps']:,.0f} req/s (≥ 10,000)", o["post"]["rps"] >= 10000),
                            (f"{r(o['post'], t['post']):.1f}× twin (≥ 3)", r(o["post"], t["post"]) >= 3),
                            (f"p99 {ms(o['post']['p99'])} (≤ 10 ms)", o["post"]["p99"] <= 10)])


def idle(res, facts):
    header(facts)
    ready, done, ours = facts.get("hold ready", {}), facts.get("hold done", {}), facts.get("ours", {})
    n = int(num(facts, "hold ready", "connections"))
    failed = sum(int(num(facts, "hold ready", k)) for k in ("refused", "closed", "timeout"))
    print(f"\n  idle keep-alive connections asked: {n} (server limit HTTP_MAX_CONNECTIONS = {ours.get('max_connections', '?')})")
    print(f"  opened and answered once: {ready.get('answered', '?')} in {ready.get('open_s', '?')} s, worst answer "
          f"{ms(num(facts, 'hold ready', 'worst_ms'))}; refused or failed: {failed} (connect refused "
          f"{ready.get('refused', '?')}, closed unanswered {ready.get('closed', '?')}, timed out {ready.get('timeout', '?')})")
    print(f"  while held, closed by the server: {done.get('closed_by_server_while_idle', '?')}; at the end, "
          f"{done.get('held', '?')} still open, a second request answered on {done.get('second_answered', '?')}, "
          f"failed on {done.get('second_failed', '?')} (worst {ms(num(facts, 'hold done', 'second_worst_ms'))})")
    print(f"\n  {'endpoint':<14} {'server':<13} {'req/s':>9} {'p50':>9} {'p99':>9} {'×/health':>9} {'':>7}"
          f" {'CPU/req':>9}   (wrk, beside the idle connections)")
    health = res.get(("ours", "health"))
    for key, label in ENDPOINTS[:2]:
        if ("ours", key) in res:
            row(label, "actionstools", res[("ours", key)], health["rps"] if health else None)
    print(f"\n  RSS of actionstools: {ours.get('rss_idle_mb', '?')} MB holding them; peak (VmHWM) over the run "
          f"{ours.get('rss_hwm_mb', '?')} MB")
    print(f"\ntargets of issue 6 ({n} idle connections):")
    ok_p99 = bool(health) and health["n"] > 0 and health["errors"] == 0 and health["p99"] < 10
    verdict("idle conns", [(f"{failed} refused (0)", failed == 0),
                           (f"/health p99 {ms(health['p99']) if health and health['n'] else 'none: no answer'}"
                            f"{', wrk socket errors ' + str(health['errors']) if health and health['errors'] else ''} (< 10 ms)", ok_p99),
                           (f"peak RSS {ours.get('rss_hwm_mb', '?')} MB (< 150 MB)", num(facts, "ours", "rss_hwm_mb", 1e9) < 150)])
    if n < 10000:
        print(f"  (the target speaks of 10,000 connections; this run asked for {n})")


def probe_text(facts, group):
    g, n = facts.get(group, {}), int(num(facts, group, "probes"))
    ok, slow = int(num(facts, group, "probes_answered")), int(num(facts, group, "probes_timed_out"))
    wait = int(num(facts, group, "probes_waiting"))
    text = f"{ok} of {n} answered"
    if n > ok:
        why = [f"{slow} timed out after 5 s"] if slow else []
        if wait:
            why.append(f"{wait} still waiting at the end, the oldest for "
                       f"{num(facts, group, 'probe_oldest_waiting_ms') / 1000:.1f} s")
        if n - ok - slow - wait:
            why.append(f"{n - ok - slow - wait} closed, refused or not 2xx")
        text += f" ({'; '.join(why)})"
    if ok:
        text += f", median {ms(num(facts, group, 'probe_median_ms'))}, worst {ms(num(facts, group, 'probe_worst_ms'))}"
    return text if g else "?"


def attack(res, facts):
    header(facts, wrk=False)
    sr, sd = facts.get("slowloris ready", {}), facts.get("slowloris done", {})
    nr, nd = facts.get("noread ready", {}), facts.get("noread done", {})
    ours, big = facts.get("ours", {}), facts.get("big", {})
    probes, answered = int(num(facts, "slowloris done", "probes")), int(num(facts, "slowloris done", "probes_answered"))
    s_failed = sum(int(num(facts, "slowloris ready", k)) for k in ("refused", "closed", "timeout"))
    print(f"\n  slowloris: {sr.get('connections', '?')} connections trickling one header line every 5 s for "
          f"{sd.get('seconds', '?')} s; {s_failed} of them refused at once")
    print(f"    /health probed every 0.5 s on a fresh connection: {probe_text(facts, 'slowloris done')}")
    cut = int(num(facts, "slowloris done", "cut_off"))
    print(f"    cut off by the server: {cut}" +
          (f" (with a 408: {sd.get('cut_408')}), after {num(facts, 'slowloris done', 'cut_first_ms') / 1000:.1f}"
           f"–{num(facts, 'slowloris done', 'cut_last_ms') / 1000:.1f} s" if cut else "") +
          f"; still trickling at the end: {sd.get('still_open', '?')}; server RSS peak {sd.get('rss_peak_mb', '?')} MB")
    n_failed = sum(int(num(facts, "noread ready", k)) for k in ("refused", "closed", "timeout"))
    print(f"\n  non-reading clients: {nr.get('connections', '?')} asked for a list of {big.get('notes', '?')} notes of "
          f"{big.get('note_kb', '?')} KB (a {big.get('answer_kb', '?')} KB answer) with a 4 KB receive buffer, "
          f"held {nd.get('seconds', '?')} s; {n_failed} refused at once; closed by the server: {nd.get('closed_by_server', '?')}")
    print(f"    /health probed meanwhile: {probe_text(facts, 'noread done')}")
    print(f"    server RSS: {ours.get('rss_before_noread_mb', '?')} MB before; peak {nd.get('rss_peak_mb', '?')} MB sampled "
          f"while they held, {ours.get('rss_noread_hwm_mb', '?')} MB VmHWM over the phase (leaving included); "
          f"{ours.get('rss_left_mb', '?')} MB as they left, {ours.get('rss_after_noread_mb', '?')} MB 5 s after")
    if ours.get("alive_after") == "0":
        print("  WARNING: the server did not answer /health after the attacks")
    hwm = max(num(facts, "ours", "rss_noread_hwm_mb"), num(facts, "noread done", "rss_peak_mb"))
    after = num(facts, "ours", "rss_after_noread_mb", 1e9)
    print("\ntargets of issue 6:")
    verdict("slowloris", [(f"{answered}/{probes} /health probes answered (all)", probes > 0 and answered == probes)])
    n_probes, n_ok = int(num(facts, "noread done", "probes")), int(num(facts, "noread done", "probes_answered"))
    verdict("non-reading", [(f"RSS peak {hwm:.0f} MB (< 400 MB)", hwm < 400),
                            (f"{after:.0f} MB 5 s after (< 250 MB)", after < 250)])
    if n_ok < n_probes:
        print(f"  (not a target of the issue, but: /health answered {n_ok} of {n_probes} probes while they held)")


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in ("compare", "idle", "attack"):
        sys.exit(__doc__)
    res, facts = read_results(sys.argv[2]), read_facts(sys.argv[3])
    if len(sys.argv) == 5:
        add_cpu(res, sys.argv[4])
    {"compare": compare, "idle": idle, "attack": attack}[sys.argv[1]](res, facts)


if __name__ == "__main__":
    main()
