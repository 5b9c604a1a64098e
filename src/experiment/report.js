// packtune report: draws report.html's charts from the JSON block that
// src/experiment/report_data.cpp builds (its header describes the fields), then writes a
// self-check into the page: a hidden pre element, id report-check, holding
// {"errors": [...], "charts": {id: points drawn}},
// which tests read from the rendered DOM (tests/e2e/report_test.sh). All the shaping of
// the data is done in C++, where it is unit-tested; this file only draws.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var check = { errors: window.packtuneErrors, charts: {} };
  var pending = [];
  var maximize = data.mode === 'max';
  var config = { responsive: true, displaylogo: false };

  // Viridis, sampled: how far a trial got, dark (lowest budget) to yellow (the max budget).
  var viridis = ['#440154', '#482878', '#3e4989', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58',
                 '#b5de2b', '#fde725'];
  var palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
                 '#bcbd22', '#17becf', '#393b79', '#637939', '#8c6d31', '#843c39', '#7b4173', '#3182bd'];

  function isNumber(v) { return typeof v === 'number' && isFinite(v); }
  function fmt(v, digits) { return isNumber(v) ? Number(v.toPrecision(digits || 4)).toString() : '–'; }
  function seconds(s) {
    if (!isNumber(s)) return '–';
    if (s < 60) return s.toFixed(1) + ' s';
    var m = Math.floor(s / 60);
    return m + ' min ' + Math.round(s - 60 * m) + ' s';
  }
  function colorAt(t) {
    if (!isNumber(t)) return '#999999';
    t = Math.max(0, Math.min(1, t));
    return viridis[Math.round(t * (viridis.length - 1))];
  }
  function element(tag, attributes, text) {
    var e = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (k) { e.setAttribute(k, attributes[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  var charts = document.getElementById('charts');
  function section(id, title, note, parent) {
    var box = element('div');
    box.appendChild(element('h2', {}, title));
    if (note) box.appendChild(element('p', { class: 'note' }, note));
    var div = element('div', { id: 'chart-' + id, class: 'chart' });
    box.appendChild(div);
    (parent || charts).appendChild(box);
    return div;
  }

  // Points plotly computed for a drawn chart: each trace's calcdata entries with coordinates
  // (scatter: x and y; bars: position and size), 0 when nothing was drawn.
  function drawnPoints(gd) {
    if (!gd.querySelector('.main-svg')) return 0;
    var n = 0;
    (gd.calcdata || []).forEach(function (trace) {
      (trace || []).forEach(function (c) {
        if ((isNumber(c.x) && isNumber(c.y)) || (isNumber(c.p) && isNumber(c.s))) n += 1;
      });
    });
    return n;
  }
  function plot(id, div, traces, layout, count) {
    layout.margin = layout.margin || { l: 60, r: 20, t: 10, b: 50 };
    layout.hovermode = layout.hovermode || 'closest';
    var drawn = Plotly.newPlot(div, traces, layout, config).then(function (gd) {
      check.charts[id] = (count || drawnPoints)(gd);
    }, function (e) {
      check.errors.push(id + ': ' + String(e && e.message || e));
      check.charts[id] = 0;
    });
    pending.push(drawn);
  }

  var metric = data.metric;
  var maxBudget = data.max_budget;
  var byId = {};
  data.trials.forEach(function (t) { byId[t.trial] = t; });
  var unitLabel = data.budget_unit || 'budget';

  // --- summary ----------------------------------------------------------------------------------
  document.getElementById('title').textContent = 'packtune report: ' + data.name;
  (function summary() {
    var counts = {};
    data.trials.forEach(function (t) { counts[t.state] = (counts[t.state] || 0) + 1; });
    var lines = [];
    lines.push('<b>tuner</b> ' + (data.tuner || '?') + ' · <b>metric</b> ' + metric + ' (' + data.mode + ') · ' +
               data.trials.length + ' trials (' +
               ['finished', 'running', 'paused', 'stopped', 'failed'].filter(function (s) { return counts[s]; })
                 .map(function (s) { return counts[s] + ' ' + s; }).join(', ') + ') · ' +
               data.reports + ' reports · ' + seconds(data.elapsed) + ' · ' +
               (data.finished ? 'the experiment finished' : 'still running or stopped before its end'));
    if (data.best) {
      var b = data.best;
      var line = '<b>best</b> trial ' + b.trial + ': ' + metric + ' ' + fmt(b.value) + ' at ' + unitLabel + ' ' +
                 fmt(b.budget);
      if (b.test) {
        var figures = ['accuracy', 'mse', 'mae', 'loss'].filter(function (m) { return ('test_' + m) in b.test; })
          .map(function (m) { return m + ' ' + fmt(b.test['test_' + m]); });
        line += ' · <b>test</b> ' + figures.join(', ') + ' (the test split, which selection never saw)';
      }
      lines.push(line);
      lines.push('<b>config</b> <code>' + JSON.stringify(b.config).replace(/&/g, '&amp;').replace(/</g, '&lt;') +
                 '</code>');
    }
    document.getElementById('summary').innerHTML = lines.join('<br>');
  })();

  // --- learning curves ----------------------------------------------------------------------------
  (function curves() {
    var div = section('curves', 'Learning curves',
      'Every trial\'s ' + metric + ' at each report against the budget it had trained (' + unitLabel +
      '), coloured by how far it got: yellow reached the max budget, dark stopped at the lowest rung.');
    var top = isNumber(maxBudget) ? maxBudget : Math.max.apply(null, data.trials.map(function (t) { return t.reached || 0; }));
    // One trace per colour, trials apart by gaps: a trace per trial would make plotly crawl at
    // thousands of trials.
    var buckets = viridis.map(function (color) { return { x: [], y: [], text: [], color: color }; });
    data.trials.forEach(function (t) {
      if (!t.budgets.length) return;
      var bucket = buckets[viridis.indexOf(colorAt(t.reached / top))];
      t.budgets.forEach(function (b, i) {
        bucket.x.push(b); bucket.y.push(t.values[i]); bucket.text.push('trial ' + t.trial);
      });
      bucket.x.push(null); bucket.y.push(null); bucket.text.push('');
    });
    var traces = buckets.filter(function (b) { return b.x.length; }).map(function (b) {
      return {
        type: 'scatter', mode: 'lines', x: b.x, y: b.y, text: b.text, line: { color: b.color, width: 1.5 },
        opacity: 0.8, showlegend: false,
        hovertemplate: '%{text}<br>' + unitLabel + ' %{x}<br>' + metric + ' %{y}<extra></extra>'
      };
    });
    var ends = data.trials.filter(function (t) { return isNumber(t.value); });
    traces.push({
      type: 'scatter', mode: 'markers', name: 'last report', showlegend: false,
      x: ends.map(function (t) { return t.reached; }), y: ends.map(function (t) { return t.value; }),
      text: ends.map(function (t) { return 'trial ' + t.trial + ' (' + t.state + ')'; }),
      marker: { size: 7, color: ends.map(function (t) { return t.reached; }), cmin: 0, cmax: top,
                colorscale: 'Viridis', showscale: true, colorbar: { title: 'reached', thickness: 12 } },
      hovertemplate: '%{text}<br>' + unitLabel + ' %{x}<br>' + metric + ' %{y}<extra></extra>'
    });
    plot('curves', div, traces, { xaxis: { title: unitLabel }, yaxis: { title: metric } });
  })();

  // --- rungs ----------------------------------------------------------------------------------------
  (function rungs() {
    // A population trains in generations, not brackets: every member goes on at every rung.
    if (data.tuner === 'pbt') return;
    var div = section('rungs', 'Rungs of each bracket',
      'One column per rung: the ' + metric + ' each trial had when its job ended at that budget; filled: ' +
      'promoted to a larger budget, open: not (yet). A bracket is the trials whose first job trained to the ' +
      'same budget; the lines follow promoted trials up their bracket.');
    var categories = [];
    var xs = { up: [], stay: [] }, ys = { up: [], stay: [] }, texts = { up: [], stay: [] };
    var lineX = [], lineY = [];
    data.brackets.forEach(function (bracket, bi) {
      var paths = {};
      bracket.rungs.forEach(function (rung) {
        var label = 'bracket ' + (bi + 1) + ' @ ' + fmt(rung.budget) + ' (' + rung.trials.length +
                    (rung.training ? ', ' + rung.training + ' training' : '') + ')';
        categories.push(label);
        rung.trials.forEach(function (id, i) {
          var v = rung.values[i];
          if (!isNumber(v)) return;
          var key = rung.promoted[i] ? 'up' : 'stay';
          xs[key].push(label); ys[key].push(v);
          texts[key].push('trial ' + id + (rung.promoted[i] ? ', promoted' : ''));
          (paths[id] = paths[id] || []).push([label, v]);
        });
      });
      Object.keys(paths).forEach(function (id) {
        if (paths[id].length < 2) return;
        paths[id].forEach(function (p) { lineX.push(p[0]); lineY.push(p[1]); });
        lineX.push(null); lineY.push(null);
      });
    });
    var traces = [
      { type: 'scatter', mode: 'lines', x: lineX, y: lineY, line: { color: '#bbb', width: 1 }, hoverinfo: 'skip',
        showlegend: false, connectgaps: false },
      { type: 'scatter', mode: 'markers', name: 'promoted', x: xs.up, y: ys.up, text: texts.up,
        marker: { size: 9, color: '#2ca02c' }, hovertemplate: '%{text}<br>' + metric + ' %{y}<extra></extra>' },
      { type: 'scatter', mode: 'markers', name: 'not promoted', x: xs.stay, y: ys.stay, text: texts.stay,
        marker: { size: 9, color: 'rgba(0,0,0,0)', line: { color: '#d62728', width: 1.5 } },
        hovertemplate: '%{text}<br>' + metric + ' %{y}<extra></extra>' }
    ];
    plot('rungs', div, traces, {
      xaxis: { type: 'category', categoryorder: 'array', categoryarray: categories, tickangle: -20 },
      yaxis: { title: metric }, legend: { orientation: 'h', y: 1.08 }, margin: { l: 60, r: 20, t: 30, b: 90 }
    }, function (gd) {
      // The connecting lines are drawn twice otherwise: count the rung points alone.
      return drawnPoints({ querySelector: gd.querySelector.bind(gd), calcdata: gd.calcdata.slice(1) });
    });
  })();

  // --- timeline -------------------------------------------------------------------------------------
  (function timeline() {
    var div = section('timeline', 'What packing did: jobs on each actor over time',
      'One bar per job (a trial trained from one budget to the next) on the actor that trained it, from ' +
      'the job\'s start to its last report. Bars side by side on one actor trained at the same time in ' +
      'one pack; bars of one colour with a black edge were members of one fused unit, trained as one model.');
    var segments = data.segments.slice().sort(function (a, b) {
      return a.actor - b.actor || a.start - b.start || String(a.unit).localeCompare(String(b.unit));
    });
    // Lanes per actor, first fit: a job takes the first lane free at its start.
    var lanes = {}, laneOf = [], order = [];
    segments.forEach(function (s) {
      var ends = lanes[s.actor] = lanes[s.actor] || [];
      var lane = 0;
      while (lane < ends.length && ends[lane] > s.start + 1e-6) lane += 1;
      ends[lane] = s.end;
      laneOf.push('actor ' + s.actor + ' · ' + (lane + 1));
    });
    Object.keys(lanes).sort(function (a, b) { return a - b; }).forEach(function (actor) {
      for (var i = 0; i < lanes[actor].length; ++i) order.push('actor ' + actor + ' · ' + (i + 1));
    });
    var units = {};
    segments.forEach(function (s) {
      if (s.unit && s.unit_size > 1) units[s.unit] = units[s.unit] || palette[Object.keys(units).length % palette.length];
    });
    var trace = {
      type: 'bar', orientation: 'h', y: laneOf,
      base: segments.map(function (s) { return s.start; }),
      x: segments.map(function (s) { return Math.max(s.end - s.start, 0.05); }),
      text: segments.map(function (s) { return String(s.trial); }), textposition: 'inside', insidetextanchor: 'middle',
      marker: {
        color: segments.map(function (s) { return units[s.unit] || '#c7d4e3'; }),
        line: { color: segments.map(function (s) { return s.unit_size > 1 ? '#000' : '#6b8bb0'; }), width: 1 }
      },
      customdata: segments.map(function (s) {
        return ['trial ' + s.trial, s.unit ? 'unit ' + s.unit + ' of ' + s.unit_size : 'unit of ' + s.unit_size,
                unitLabel + ' ' + fmt(s.from) + ' → ' + fmt(s.to), seconds(s.start) + ' → ' + seconds(s.end)];
      }),
      hovertemplate: '%{customdata[0]}<br>%{customdata[1]}<br>%{customdata[2]}<br>%{customdata[3]}<extra></extra>'
    };
    var height = Math.max(260, 60 + 22 * order.length);
    div.style.height = height + 'px';
    plot('timeline', div, [trace], {
      barmode: 'overlay', bargap: 0.15, showlegend: false,
      xaxis: { title: 'seconds since the experiment started' },
      yaxis: { type: 'category', categoryorder: 'array', categoryarray: order.slice().reverse(), automargin: true }
    });
  })();

  // --- population-based training: who took whose weights, and each member's hyper-parameters ---------
  (function population() {
    var exploited = data.trials.filter(function (t) { return t.exploits; });
    if (!exploited.length) return;
    var div = section('lineage', 'Population: who took whose weights',
      'One line per member along ' + unitLabel + ', its reports coloured by ' + metric + '. A red link runs from a ' +
      'donor where the member took its checkpoint to the member\'s next report, trained from those weights with the ' +
      'donor\'s config, explored.');
    var lines = { x: [], y: [], mode: 'lines', type: 'scatter', hoverinfo: 'skip', line: { color: '#c7d4e3', width: 1 } };
    var points = { x: [], y: [], text: [], mode: 'markers', type: 'scatter',
      marker: { size: 7, color: [], colorscale: 'Viridis', reversescale: !maximize,
                colorbar: { title: metric, thickness: 12 } },
      hovertemplate: '%{text}<extra></extra>' };
    var links = { x: [], y: [], text: [], mode: 'lines+markers', type: 'scatter', line: { color: '#d62728', width: 2 },
      marker: { size: 4, color: '#d62728' }, hovertemplate: '%{text}<extra></extra>' };
    data.trials.forEach(function (t) {
      lines.x.push(0, t.reached, null);
      lines.y.push(t.trial, t.trial, null);
      t.budgets.forEach(function (b, i) {
        points.x.push(b); points.y.push(t.trial); points.marker.color.push(isNumber(t.values[i]) ? t.values[i] : null);
        points.text.push('trial ' + t.trial + ' at ' + unitLabel + ' ' + fmt(b) + ': ' + metric + ' ' + fmt(t.values[i]));
      });
      (t.exploits || []).forEach(function (e) {
        var text = 'trial ' + t.trial + ' took trial ' + e.from_trial + '\'s weights at ' + unitLabel + ' ' + fmt(e.from_budget);
        links.x.push(e.from_budget, e.budget, null);
        links.y.push(e.from_trial, t.trial, null);
        links.text.push(text, text, null);
      });
    });
    div.style.height = Math.max(260, 80 + 18 * data.trials.length) + 'px';
    plot('lineage', div, [lines, points, links], {
      showlegend: false, xaxis: { title: unitLabel }, yaxis: { title: 'trial', dtick: 1 }
    });

    // Each hyper-parameter some member's config changed in: its value over the budget, a step line per member.
    var changed = {};
    exploited.forEach(function (t) {
      t.schedule.forEach(function (s, i) {
        if (i === 0) return;
        Object.keys(s.config).forEach(function (k) {
          if (JSON.stringify(s.config[k]) !== JSON.stringify(t.schedule[i - 1].config[k])) changed[k] = true;
        });
      });
    });
    Object.keys(changed).sort().forEach(function (key) {
      var chart = section('schedule-' + key, 'Population: ' + key + ' of each member over ' + unitLabel,
        'A step where the member took a donor\'s config, explored; a member that never exploited keeps its own.');
      var traces = data.trials.map(function (t, n) {
        var schedule = t.schedule || [{ from: 0, config: t.config }];
        var x = [], y = [];
        schedule.forEach(function (s) { x.push(s.from); y.push(s.config[key]); });
        x.push(t.reached);
        y.push(schedule[schedule.length - 1].config[key]);
        return { x: x, y: y, mode: 'lines', type: 'scatter', line: { shape: 'hv', color: palette[n % palette.length] },
                 name: 'trial ' + t.trial, hovertemplate: 'trial ' + t.trial + ': ' + key + ' %{y}<extra></extra>' };
      });
      var numbers = traces.every(function (tr) { return tr.y.every(isNumber); });
      // As the space samples it: a log-uniform parameter (a learning rate) on a log axis.
      var type = (data.space[key] || {}).type === 'loguniform' ? 'log' : (numbers ? 'linear' : 'category');
      plot('schedule-' + key, chart, traces, {
        showlegend: false, xaxis: { title: unitLabel }, yaxis: { title: key, type: type }
      });
    });
  })();

  // --- best so far and parallel coordinates side by side ---------------------------------------------
  // Both boxes first: a chart takes its width when drawn, and a box added later would halve it.
  var row = element('div', { class: 'row' });
  var bestBox = element('div'), parallelBox = element('div');
  row.appendChild(bestBox);
  row.appendChild(parallelBox);
  charts.appendChild(row);
  (function best() {
    var box = bestBox;
    var div = section('best', 'Best ' + metric + ' against wall time',
      'The best report so far (' + (maximize ? 'highest' : 'lowest') + ' ' + metric + '), at any budget; ' +
      'grey: every report.', box);
    var steps = data.best_over_time;
    var x = steps.map(function (p) { return p.wall_time; }), y = steps.map(function (p) { return p.value; });
    if (steps.length) { x.push(Math.max(data.elapsed, x[x.length - 1])); y.push(y[y.length - 1]); }
    var reports = { x: [], y: [], text: [] };
    data.trials.forEach(function (t) {
      t.values.forEach(function (v, i) {
        if (!isNumber(v)) return;
        reports.x.push(t.wall_times[i]); reports.y.push(v);
        reports.text.push('trial ' + t.trial + ' at ' + unitLabel + ' ' + fmt(t.budgets[i]));
      });
    });
    plot('best', div, [
      { type: 'scatter', mode: 'markers', x: reports.x, y: reports.y, text: reports.text, name: 'reports',
        marker: { size: 5, color: '#bbb' }, hovertemplate: '%{text}<br>%{x:.1f} s<br>%{y}<extra></extra>' },
      { type: 'scatter', mode: 'lines+markers', x: x, y: y, name: 'best so far', line: { shape: 'hv', color: '#1f77b4' },
        text: steps.map(function (p) { return 'trial ' + p.trial + ' at ' + unitLabel + ' ' + fmt(p.budget); })
          .concat(steps.length ? ['now'] : []),
        hovertemplate: '%{text}<br>%{x:.1f} s<br>' + metric + ' %{y}<extra></extra>' }
    ], { xaxis: { title: 'seconds since the experiment started' }, yaxis: { title: metric },
         legend: { orientation: 'h', y: 1.1 } }, function (gd) {
      return drawnPoints({ querySelector: gd.querySelector.bind(gd), calcdata: gd.calcdata.slice(1) });
    });
  })();

  (function parallel() {
    var box = parallelBox;
    var div = section('parallel', 'Hyper-parameters against ' + metric,
      'A line per trial through the hyper-parameters that differ (log-uniform ones as log10) to its ' +
      metric + ' at the largest budget it reached; drag along an axis to pick a range.', box);
    var trials = data.trials.filter(function (t) { return isNumber(t.value); });
    var keys = {};
    data.trials.forEach(function (t) { Object.keys(t.config || {}).forEach(function (k) { keys[k] = true; }); });
    var dimensions = [];
    Object.keys(keys).sort().forEach(function (k) {
      var values = trials.map(function (t) { return t.config[k]; });
      var distinct = values.map(function (v) { return JSON.stringify(v); })
        .filter(function (v, i, all) { return all.indexOf(v) === i; });
      if (distinct.length < 2) return;
      var numeric = values.every(isNumber);
      var space = data.space[k] || {};
      if (numeric && space.type === 'loguniform' && values.every(function (v) { return v > 0; })) {
        dimensions.push({ label: 'log10(' + k + ')', values: values.map(function (v) { return Math.log10(v); }) });
      } else if (numeric) {
        dimensions.push({ label: k, values: values });
      } else {
        distinct.sort();
        dimensions.push({ label: k, values: values.map(function (v) { return distinct.indexOf(JSON.stringify(v)); }),
                          tickvals: distinct.map(function (v, i) { return i; }), ticktext: distinct });
      }
    });
    var values = trials.map(function (t) { return t.value; });
    dimensions.push({ label: 'reached', values: trials.map(function (t) { return t.reached; }) });
    dimensions.push({ label: metric, values: values });
    plot('parallel', div, [{
      type: 'parcoords', dimensions: dimensions,
      line: { color: values, colorscale: 'Viridis', reversescale: !maximize, showscale: true,
              colorbar: { title: metric, thickness: 12 } }
    }], { margin: { l: 70, r: 70, t: 50, b: 30 } }, function (gd) {
      return gd.querySelector('.parcoords') ? trials.length : 0;
    });
  })();

  // --- table ------------------------------------------------------------------------------------------
  (function table() {
    var box = element('div');
    charts.appendChild(box);
    box.appendChild(element('h2', {}, 'Trials'));
    box.appendChild(element('p', { class: 'note' }, 'Click a column\'s name to sort by it. reached: the largest ' +
      'budget reported; ' + metric + ': the value there; best: the trial\'s best report at any budget.'));
    var keys = {};
    data.trials.forEach(function (t) { Object.keys(t.config || {}).forEach(function (k) { keys[k] = true; }); });
    var configKeys = Object.keys(keys).sort();
    // A learning sampler's reasons: the budget it modelled and its good set (the whole record
    // is the cell's tooltip).
    var sampled = data.trials.some(function (t) { return t.why; });
    var why = function (t) {
      if (!t.why) return '';
      if (t.why.random) return 'random: ' + (t.why.reason || '');
      return t.why.sampler + (t.why.budget !== undefined ? ' at ' + t.why.budget : '') + ': good ' +
        (t.why.good || []).join(' ') + ' of ' + ((t.why.good || []).length + (t.why.bad || 0));
    };
    var columns = [
      { name: 'trial', get: function (t) { return t.trial; } },
      { name: 'state', get: function (t) { return t.state; } },
      { name: 'reached', get: function (t) { return t.reached; } },
      { name: metric, get: function (t) { return t.value; } },
      { name: 'best', get: function (t) { return t.best_value; } },
      { name: 'jobs', get: function (t) { return t.jobs; } },
      { name: 'bracket', get: function (t) { return t.bracket; } },
      { name: 'actors', get: function (t) { return t.actors.join(' '); } }
    ].concat(sampled ? [{ name: 'sampler', get: why, title: function (t) { return JSON.stringify(t.why); } }] : [])
    .concat(configKeys.map(function (k) {
      return { name: k, get: function (t) { var v = (t.config || {})[k]; return typeof v === 'object' ? JSON.stringify(v) : v; } };
    }));
    var tableBox = element('div', { class: 'table-box' });
    var tableElement = element('table', { id: 'trials' });
    var head = element('tr');
    columns.forEach(function (c, i) {
      var th = element('th', {}, c.name);
      th.addEventListener('click', function () { sortBy(i, th); });
      head.appendChild(th);
    });
    var thead = element('thead');
    thead.appendChild(head);
    tableElement.appendChild(thead);
    var tbody = element('tbody');
    tableElement.appendChild(tbody);
    tableBox.appendChild(tableElement);
    box.appendChild(tableBox);
    var rows = data.trials.slice();
    function render() {
      tbody.textContent = '';
      rows.forEach(function (t) {
        var tr = element('tr');
        columns.forEach(function (c) {
          var v = c.get(t);
          var td = element('td', isNumber(v) ? {} : { class: 'text' },
                           isNumber(v) ? (Number.isInteger(v) ? String(v) : fmt(v, 5)) : (v === undefined || v === null ? '' : String(v)));
          if (c.title) td.title = c.title(t);
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      });
    }
    var sorted = { column: -1, up: true };
    function sortBy(i, th) {
      sorted.up = sorted.column === i ? !sorted.up : true;
      sorted.column = i;
      var get = columns[i].get;
      rows.sort(function (a, b) {
        var x = get(a), y = get(b);
        var missingX = x === null || x === undefined, missingY = y === null || y === undefined;
        if (missingX || missingY) return missingX - missingY;  // missing values last either way
        var order = isNumber(x) && isNumber(y) ? x - y : String(x).localeCompare(String(y));
        return sorted.up ? order : -order;
      });
      Array.prototype.forEach.call(head.children, function (h) { h.className = ''; });
      th.className = sorted.up ? 'sorted-up' : 'sorted-down';
      render();
    }
    render();
    // Best first, as a reader looks for it.
    sortBy(3, head.children[3]);
    if (maximize) sortBy(3, head.children[3]);
    check.charts.table = tbody.children.length;
  })();

  // --- the self-check -------------------------------------------------------------------------------
  function writeCheck() {
    var pre = document.getElementById('report-check') || element('pre', { id: 'report-check' });
    pre.textContent = JSON.stringify(check);
    document.body.appendChild(pre);
  }
  writeCheck();
  Promise.all(pending).then(writeCheck, function (e) { check.errors.push(String(e)); writeCheck(); });
  window.addEventListener('error', function () { setTimeout(writeCheck, 0); });
})();
