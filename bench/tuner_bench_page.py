"""tuner_bench_page: tuner_bench.html, one self-contained page (plotly.js and the medians inlined).

tests/bench/tuner_page_test.py opens it offline in headless Chromium and reads back PAGE_END's
check: no script errors, a curve per tool.
"""
from bench_lib import PAGE_END, write_self_contained_page

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>tuner_bench</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin:0.5em 0 1.5em}
td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:left}
.chart{width:100%;max-width:1000px;height:460px}</style>
<script>var pageErrors = [];
window.addEventListener('error', function (e) { pageErrors.push(String(e.message)); });</script>
<script>/*plotly*/</script></head>
<body><h1>tuner_bench</h1><p id="what"></p><ul id="notes"></ul>
<h2>Median final regret and mean rank</h2><table id="finals"></table>
<div id="charts"></div>
<script>
var bench = /*data*/;
var palette = {random: '#7f7f7f', asha: '#1f77b4', hyperband: '#ff7f0e', async_hyperband: '#2ca02c',
               optuna_tpe: '#d62728', optuna_random: '#e377c2', dehb: '#9467bd'};
var drawn = {};
function cell(x) { return x === null || x === undefined ? 'never' : Number(x).toPrecision(3); }
document.getElementById('what').textContent = bench.what;
bench.notes.forEach(function (n) { var li = document.createElement('li'); li.textContent = n;
  document.getElementById('notes').appendChild(li); });
var names = Object.keys(bench.functions);
var rows = '<tr><th>tool</th>' + names.map(function (n) { return '<th>' + n + '</th>'; }).join('') +
           '<th>mean rank overall</th></tr>';
bench.tools.forEach(function (tool) {
  rows += '<tr><td>' + tool + '</td>' + names.map(function (n) {
    var f = bench.functions[n];
    return '<td>' + cell(f.median_final_regret[tool]) + ' (' + f.mean_rank[tool].toFixed(2) + ')</td>';
  }).join('') + '<td>' + bench.overall_mean_rank[tool].toFixed(2) + '</td></tr>';
});
document.getElementById('finals').innerHTML = rows;
names.forEach(function (n, i) {
  var f = bench.functions[n];
  var h = document.createElement('h2');
  h.textContent = n + ': median regret over ' + bench.seeds.length + ' seeds (f* = ' + f.optimum +
                  ', budgets ' + f.min_budget + ' ... ' + f.max_budget + ')';
  document.getElementById('charts').appendChild(h);
  var chart = document.createElement('div');
  chart.className = 'chart';
  chart.id = 'chart-' + i;
  document.getElementById('charts').appendChild(chart);
  var traces = bench.tools.map(function (tool) {
    var base = tool.split('+')[0];
    return {name: tool, x: f.grid, y: f.median_regret[tool], mode: 'lines',
            line: {shape: 'hv', color: palette[base] || '#000', dash: tool.indexOf('+tpe') >= 0 ? 'dash' : 'solid',
                   width: base.indexOf('optuna') === 0 || base === 'dehb' ? 3 : 2}};
  });
  if (typeof Plotly === 'undefined') { chart.textContent = 'plotly.js was not available when the page was written'; return; }
  Plotly.newPlot(chart.id, traces, {xaxis: {title: 'simulated time'}, yaxis: {title: 'median regret', type: 'log'},
                 margin: {t: 20}}, {responsive: true, displaylogo: false});
  drawn[chart.id] = document.getElementById(chart.id).querySelectorAll('.scatterlayer .trace').length;
});
""" + PAGE_END


def write_page(path, r, plotly_path):
    """One self-contained page: plotly.js and the figures inlined, nothing fetched when it opens.
    The per-seed traces stay in the JSON; the page carries the medians and ranks."""
    what = (f"{r['date']}: {len(r['seeds'])} seeds, {r['workers']} simulated workers, time budget "
            f"{r['time_budget']:g} x each function's max budget, eta {r['eta']}; regret = {r['regret']}; "
            f"dashed: packtune with sampler tpe; {r['cores']} cores, {r['host']}")
    slim = {"what": what, "notes": r["notes"], "tools": r["tools"], "seeds": r["seeds"],
            "overall_mean_rank": r["overall_mean_rank"],
            "functions": {n: {k: v for k, v in f.items() if k != "runs"} for n, f in r["functions"].items()}}
    write_self_contained_page(path, PAGE, slim, plotly_path)
