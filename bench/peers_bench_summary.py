"""peers_bench_summary: what peers_bench's figures mean, and their text.

Per sitting the measures of each peer against packtune (the strict measure, the other way round,
and the same model), over several seeds their medians and the noise floor; then the tables
peers_bench prints. Plain Python on the ways' result dicts, so that tests/bench/peers_bench_test.py
can check the rules without running anything.
"""
import math

from peers_bench_ways import WAYS


def same_config(a, b, space):
    """Whether two trials' configs agree on every sampled key (floats to 1e-9)."""
    for k in space:
        x, y = a.get(k), b.get(k)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            if not math.isclose(x, y, rel_tol=1e-9, abs_tol=0.0):
                return False
        elif x != y:
            return False
    return True


def best_report(reports):
    """The report with the highest val_accuracy, the earliest of equals."""
    scored = [r for r in reports if r.get("val_accuracy") is not None]
    return max(scored, key=lambda r: (r["val_accuracy"], -r["t"])) if scored else None


def same_model_seconds(base, config, budget, space):
    """When `base` (a packtune way) first reported a trial of `config` at `budget` or beyond:
    the same model as a peer's best, up to the trial's seed (None if it never trained it so far)."""
    trials = {t for t, c in base.get("_configs", {}).items() if same_config(c, config, space)}
    times = [r["t"] for r in base.get("_reports", []) if r["trial"] in trials and r["budget"] >= budget - 1e-9]
    return min(times) if times else None


def time_to(curve_points, target):
    for t, best in curve_points:
        if best >= target - 1e-12:
            return t
    return None


def ratio(x, y):
    return x / y if x is not None and y else None


def reverse_measure(base, way):
    """The strict measure the other way round: `way`'s time to packtune's (`base`'s) best over
    packtune's own time to it. A best val_accuracy is the top of many noisy reports; where
    neither way reaches the other's best, the race is to the noise more than to a model."""
    best = base.get("best_val_accuracy")
    if best is None:
        return {}
    its_time = time_to(way.get("curve", []), best)
    return {"packtune_best": best, "its_seconds_to_packtune_best": its_time,
            "it_over_packtune_to_packtune_best": ratio(its_time, time_to(base.get("curve", []), best))}


def fmt(x, spec, none="-"):
    return format(x, spec) if x is not None else none


def trials_text(s):
    """"17 trials", or "3 sweeps of 17 = 51 trials"."""
    sweeps = s.get("sweeps", 1)
    text = f"{s['trials']} trials" if sweeps == 1 else f"{sweeps} sweeps of {s['sweep_trials']} = {s['trials']} trials"
    own = s.get("packtune_sweeps", sweeps)
    if own != sweeps:
        text += f" (packtune: {own} sweeps = {own * s['sweep_trials']} trials)"
    if s.get("packtune_order", "shared") != "shared":
        text += f", packtune's data order {s['packtune_order']}"
    return text


def samplers_text(r, counts=True):
    """Which sampler drew each way's configs, in one line (with `counts`, how many configs
    packtune's TPE modelled)."""
    if r.get("same_configs"):
        return "the ones packtune drew (its sampler random), for every way"

    def modelled(w):
        n = r["ways"].get(w, {}).get("modelled_configs") if counts else None
        return f" ({n} of {r['ways'][w]['trials']} configs modelled, the rest drawn at random)" if n is not None else ""
    return "each way its own sampler: " + "; ".join(f"{w}: {text}{modelled(w)}" for w, text in r.get("samplers", {}).items())


def print_table(r):
    s = r["schedule"]
    print(f"Hyperband eta {s['eta']}, {s['min_epochs']:g} ... {s['max_epochs']:g} epochs, {trials_text(s)}, "
          f"reports every {s['report_every']:g} epochs (peers: max_t {s['peers_max_t']}); "
          f"train {r['train_size'] or 'all'}, validation {r['validation_size']}, test {r['test_size']}; "
          f"seed {r['seed']}; {r.get('device', 'cpu')}; packtune {r['actors']} actors, max_pack {r['max_pack']}; peers {r['peer_workers']} workers")
    print(f"{r['date']}, {r['cores']} cores; target val_accuracy {fmt(r['target'], '.4f')}\n")
    print(f"{'way':<11} {'wall s':>8} {'/ptune':>7} {'best val':>9} {'test':>7} {'to target s':>12} {'/ptune':>7} "
          f"{'trials':>6}  load before/after")
    for name in WAYS:
        w = r["ways"].get(name)
        if not w:
            continue
        rr = r["ratios"].get(name, {})
        print(f"{name:<11} {w['wall_seconds']:8.1f} {fmt(rr.get('wall_over_packtune'), '.2f', '1' if name == 'packtune' else '-'):>7} "
              f"{fmt(w['best_val_accuracy'], '.4f'):>9} {fmt(w['test_accuracy'], '.4f'):>7} "
              f"{fmt(w['seconds_to_target'], '.1f'):>12} "
              f"{fmt(rr.get('to_target_over_packtune'), '.2f', '1' if name == 'packtune' else '-'):>7} "
              f"{w['trials']:>6}  {w['load_average_before'][0] if w['load_average_before'] else '-'}"
              f"/{w['load_average_after'][0] if w['load_average_after'] else '-'}")
    print(f"\nconfigs: {samplers_text(r)}")
    for name, rr in r["ratios"].items():
        if name == "max_pack_1" or rr.get("its_best") is None:
            continue
        print(f"{name}'s best {rr['its_best']:.4f}: it took {fmt(rr['its_seconds_to_its_best'], '.1f')} s, packtune "
              + (f"{rr['packtune_seconds_to_its_best']:.1f} s ({rr['packtune_over_it_to_its_best']:.2f} of its time)"
                 if rr.get("packtune_seconds_to_its_best") is not None else "never reached it"))
        if rr.get("packtune_best") is not None:
            back = rr["its_seconds_to_packtune_best"]
            print(f"  packtune's best {rr['packtune_best']:.4f}: {name} "
                  + (f"{back:.1f} s ({rr['it_over_packtune_to_packtune_best']:.2f} of packtune's time)"
                     if back is not None else "never reached it"))
        if "packtune_seconds_to_its_best_model" in rr:
            same = rr["packtune_seconds_to_its_best_model"]
            print(f"  the same model (its best config at budget {rr['its_best_budget']:g}): packtune "
                  + (f"{same:.1f} s ({rr['packtune_over_it_to_its_best_model']:.2f} of its time)" if same is not None
                     else "never trained it that far"))


def median_measure(values):
    """The median of packtune's time over a peer's to the peer's best, a sitting where packtune
    never reached it counting as worse than any ratio (None when those are half or more)."""
    ranked = sorted(values, key=lambda v: (v is None, v if v is not None else 0.0))
    middle = ranked[(len(ranked) - 1) // 2:len(ranked) // 2 + 1]
    if any(v is None for v in middle):
        return None
    return sum(middle) / len(middle)


def summarize_seeds(runs):
    """Per way that is not packtune: the strict measure in each sitting and its median."""
    out = {}
    for name in WAYS:
        if name == "packtune" or not all(name in r["ratios"] for r in runs):
            continue
        measures = [r["ratios"][name]["packtune_over_it_to_its_best"] for r in runs]
        out[name] = {"seeds": [r["seed"] for r in runs], "sampler": runs[0].get("samplers", {}).get(name),
                     "its_bests": [r["ratios"][name]["its_best"] for r in runs],
                     "packtune_over_it_to_its_best": measures,
                     "reached": sum(m is not None for m in measures),
                     "median": median_measure(measures),
                     "wall_over_packtune": [r["ratios"][name]["wall_over_packtune"] for r in runs]}
        if all("it_over_packtune_to_packtune_best" in r["ratios"][name] for r in runs):
            back = [r["ratios"][name]["it_over_packtune_to_packtune_best"] for r in runs]
            out[name].update({"it_over_packtune_to_packtune_best": back,
                              "reverse_reached": sum(m is not None for m in back),
                              "reverse_median": median_measure(back)})
        if all("packtune_over_it_to_its_best_model" in r["ratios"][name] for r in runs):
            models = [r["ratios"][name]["packtune_over_it_to_its_best_model"] for r in runs]
            out[name].update({"packtune_over_it_to_its_best_model": models,
                              "model_reached": sum(m is not None for m in models),
                              "model_median": median_measure(models)})
    return out


def noise_floor(runs):
    """Per way: the strict measure of its run in each seed against its own run in the next seed
    (the last against the first), that is seed S's time to seed S+1's best over seed S+1's time
    to it. Two runs of one tool differ only by seed, so this is what the measure gives for two
    equal tools. The run with the lower best never reaches the other's, so about half of these
    read never."""
    out = {}
    if len(runs) < 2:
        return out
    for name in WAYS:
        if not all(name in r["ways"] for r in runs):
            continue
        pairs, measures = [], []
        for i, r in enumerate(runs):
            other = runs[(i + 1) % len(runs)]
            best = other["ways"][name].get("best_val_accuracy")
            pairs.append([r["seed"], other["seed"]])
            if best is None:
                measures.append(None)
                continue
            measures.append(ratio(time_to(r["ways"][name].get("curve", []), best),
                                  time_to(other["ways"][name].get("curve", []), best)))
        out[name] = {"pairs": pairs, "measures": measures, "reached": sum(m is not None for m in measures),
                     "median": median_measure(measures)}
    return out


def print_noise_floor(floor):
    if not floor:
        return
    print("noise floor: each way against itself, seed S's time to seed S+1's best over seed S+1's own time to it")
    for name, f in floor.items():
        per = ", ".join(fmt(m, ".2f", "never") for m in f["measures"])
        print(f"{name:<11} {per}; median {fmt(f['median'], '.2f', 'never')}; reached in {f['reached']} of "
              f"{len(f['measures'])}")


def print_summary(summary, runs):
    print(f"\n{len(runs)} sittings, seeds {', '.join(str(r['seed']) for r in runs)}, {trials_text(runs[0]['schedule'])}; "
          f"configs: {samplers_text(runs[0], counts=False)}")
    modelled = [r["ways"].get("packtune", {}).get("modelled_configs") for r in runs]
    if all(n is not None for n in modelled):
        print(f"packtune's TPE modelled {', '.join(map(str, modelled))} of {runs[0]['schedule']['trials']} configs")
    print("strict: packtune's time to each peer's best over the peer's own time to it (median over the seeds, "
          "a seed where packtune never reached it ranking last)")
    for name, s in summary.items():
        per = ", ".join(fmt(m, ".2f", "never") for m in s["packtune_over_it_to_its_best"])
        print(f"{name:<11} {per}; median {fmt(s['median'], '.2f', 'never')}; packtune reached its best in "
              f"{s['reached']} of {len(runs)}")
        if "reverse_median" in s:
            per = ", ".join(fmt(m, ".2f", "never") for m in s["it_over_packtune_to_packtune_best"])
            print(f"{'':<11} the other way round, its time to packtune's best over packtune's: {per}; median "
                  f"{fmt(s['reverse_median'], '.2f', 'never')}; it reached packtune's best in {s['reverse_reached']} "
                  f"of {len(runs)}")
        if "model_median" in s:
            per = ", ".join(fmt(m, ".2f", "never") for m in s["packtune_over_it_to_its_best_model"])
            print(f"{'':<11} its best model (config and budget): {per}; median "
                  f"{fmt(s['model_median'], '.2f', 'never')}; trained by packtune in {s['model_reached']} of {len(runs)}")
