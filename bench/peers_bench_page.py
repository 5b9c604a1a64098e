"""peers_bench_page: --html's page, one self-contained file (plotly.js and the figures inlined).

tests/bench/peers_page_test.py opens it offline in headless Chromium and reads back PAGE_END's
check: no script errors, a point drawn per report.
"""
from bench_lib import PAGE_END, write_self_contained_page
from peers_bench_summary import samplers_text, trials_text

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>peers_bench</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{padding:2px 8px;
border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:left}
.chart{width:100%;max-width:1000px;height:420px}</style>
<script>var pageErrors = [];
window.addEventListener('error', function (e) { pageErrors.push(String(e.message)); });</script>
<script>/*plotly*/</script></head>
<body><h1>peers_bench</h1><p id="what"></p><div id="sittings"></div>
<script>
var bench = /*data*/;
var colors = {packtune: '#1f77b4', max_pack_1: '#17becf', ray_tune: '#ff7f0e', optuna: '#2ca02c'};
var drawn = {};  // chart id -> points drawn, for #page-check
function cell(x, digits) { return x === null || x === undefined ? 'never' : Number(x).toFixed(digits); }
document.getElementById('what').textContent = bench.what;
bench.runs.forEach(function (run, i) {
  var box = document.createElement('div');
  var h = document.createElement('h2');
  h.textContent = 'seed ' + run.seed + ' (' + run.date + ')';
  box.appendChild(h);
  var chart = document.createElement('div');
  chart.className = 'chart';
  chart.id = 'chart-' + i;
  box.appendChild(chart);
  var rows = '<tr><th>way</th><th>wall s</th><th>best val</th><th>test of the best</th>' +
             '<th>strict: packtune over it</th><th>same model: packtune over it</th></tr>';
  var traces = [];
  Object.keys(run.ways).forEach(function (name) {
    var w = run.ways[name], r = run.ratios[name] || {};
    traces.push({name: name + ': best val_accuracy', x: w.curve.map(function (p) { return p[0]; }),
                 y: w.curve.map(function (p) { return p[1]; }), mode: 'lines+markers',
                 line: {shape: 'hv', color: colors[name]}, legendgroup: name});
    if (w.test_accuracy !== null && w.test_accuracy !== undefined) {
      traces.push({name: name + ': test accuracy of its best', x: [w.wall_seconds], y: [w.test_accuracy],
                   mode: 'markers', marker: {symbol: 'star', size: 12, color: colors[name]}, legendgroup: name});
    }
    rows += '<tr><td>' + name + '</td><td>' + cell(w.wall_seconds, 1) + '</td><td>' + cell(w.best_val_accuracy, 4) +
            '</td><td>' + cell(w.test_accuracy, 4) + '</td><td>' +
            (name === 'packtune' ? '' : cell(r.packtune_over_it_to_its_best, 2)) + '</td><td>' +
            (name === 'packtune' || !('packtune_over_it_to_its_best_model' in r) ? '' :
             cell(r.packtune_over_it_to_its_best_model, 2)) + '</td></tr>';
  });
  var table = document.createElement('table');
  table.innerHTML = rows;
  box.appendChild(table);
  document.getElementById('sittings').appendChild(box);
  // From a little below the lowest final best: the first reports (a tenth of the classes right)
  // would squeeze the curves that matter into the top of the chart.
  var finals = Object.keys(run.ways).map(function (n) { return run.ways[n].best_val_accuracy; })
                     .filter(function (v) { return v !== null && v !== undefined; });
  var low = finals.length ? Math.min.apply(null, finals) - 0.1 : 0;
  var high = finals.length ? Math.min(1, Math.max.apply(null, finals) + 0.02) : 1;
  Plotly.newPlot(chart.id, traces, {title: {text: 'best val_accuracy so far; stars: test accuracy of each best trial',
                                            x: 0.02, xanchor: 'left'},
                 xaxis: {title: 'seconds since the way started'}, yaxis: {title: 'accuracy', range: [low, high]},
                 margin: {t: 40}}, {responsive: true, displaylogo: false});
  drawn[chart.id] = document.getElementById(chart.id).querySelectorAll('.scatterlayer .point').length;
});
""" + PAGE_END


def write_page(path, runs, plotly_path):
    """One self-contained page: plotly.js and the figures inlined, nothing fetched when it opens."""
    first = runs[0]
    s = first["schedule"]
    what = (f"{s['tuner']} eta {s['eta']}, {s['min_epochs']:g} ... {s['max_epochs']:g} epochs, {trials_text(s)}; "
            f"train {first['train_size'] or 'all'}, validation {first['validation_size']}, test {first['test_size']}; "
            f"packtune {first['actors']} actors, max_pack {first['max_pack']}; peers {first['peer_workers']} workers; "
            f"configs: {samplers_text(first, counts=len(runs) == 1)}; "
            f"{first['cores']} cores, {first['host']}")
    write_self_contained_page(path, PAGE, {"what": what, "runs": runs}, plotly_path)
