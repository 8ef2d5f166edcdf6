/* aiinfra docs site: interactive formula forms, calculator forms and tree walkers.
 *
 * The numbers come from window.AIINFRA_FORMULAS (aiinfra-formulas.js), whose functions SymPy's
 * JavaScript printer wrote from the same formula trees the Python engine compiles. This file
 * only resolves which formulas to run, in the order engine/calculators.py resolves them
 * (_Plan.need / _Plan.leaf / run), and draws the forms. Nothing is fetched from the network.
 */
(function () {
  "use strict";

  // ------------------------------------------------------------------ numbers (engine/humanize.py)
  function number(x) {
    if (typeof x === "string") return x;
    if (x === 0) return "0";
    if (!isFinite(x)) return String(x);
    var ax = Math.abs(x);
    if (Number.isInteger(x) && ax < 1e7) {
      var s = String(Math.abs(x)).replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f");
      return (x < 0 ? "-" : "") + (ax >= 1e4 ? s : String(Math.abs(x)));
    }
    if (ax >= 1e-3 && ax < 1e6) return String(Number(x.toPrecision(4)));
    var parts = x.toExponential(3).split("e");
    var mantissa = parts[0].replace(/0+$/, "").replace(/\.$/, "");
    return mantissa + "e" + parseInt(parts[1], 10);
  }

  var BINARY = [["PiB", Math.pow(2, 50)], ["TiB", Math.pow(2, 40)], ["GiB", Math.pow(2, 30)], ["MiB", Math.pow(2, 20)], ["KiB", 1024]];
  var DECIMAL = [["E", 1e18], ["P", 1e15], ["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];
  var TIME = [["yr", 365 * 86400], ["d", 86400], ["h", 3600], ["min", 60], ["s", 1], ["ms", 1e-3], ["us", 1e-6], ["ns", 1e-9]];

  function g4(x) { return String(Number(x.toPrecision(4))); }
  function pick(v) {
    for (var i = 0; i < DECIMAL.length; i++) if (v >= DECIMAL[i][1]) return DECIMAL[i];
    return ["", 1];
  }
  function friendly(value, unit) {
    if (typeof value !== "number" || !isFinite(value) || value === 0) return "";
    var v = Math.abs(value), i;
    if (unit === "B") {
      for (i = 0; i < BINARY.length; i++) {
        if (v >= BINARY[i][1]) {
          var d = pick(v);
          return g4(value / BINARY[i][1]) + " " + BINARY[i][0] + " = " + g4(value / d[1]) + " " + d[0] + "B";
        }
      }
      return "";
    }
    if (unit === "s") {
      for (i = 0; i < TIME.length; i++) {
        if (v >= TIME[i][1] && TIME[i][0] !== "s") return g4(value / TIME[i][1]) + " " + TIME[i][0];
        if (v >= TIME[i][1]) return "";
      }
      return g4(value * 1e9) + " ns";
    }
    var bases = ["B/s", "FLOP/s", "W", "J", "FLOP", "tokens/s", "bit/s"];
    if (bases.indexOf(unit) >= 0) {
      var p = pick(v);
      return p[0] && v / p[1] < 1000 ? g4(value / p[1]) + " " + p[0] + unit : "";
    }
    return "";
  }

  // ------------------------------------------------------------------ errors and domains (engine/evaluate.py)
  function InputError(field, message) { this.field = field; this.message = message; }
  function Missing(field, message) { this.field = field; this.message = message; this.missing = true; }

  var DOMAIN_TEXT = {
    positive: "a number > 0", nonnegative: "a number >= 0", positive_integer: "a whole number >= 1",
    nonnegative_integer: "a whole number >= 0", fraction: "a fraction from 0 to 1",
    positive_fraction: "a fraction above 0 and at most 1", fraction_below_one: "a fraction from 0 up to but not including 1",
    ge_one: "a number >= 1", ge_two_integer: "a whole number >= 2", real: "a number"
  };
  var DOMAIN_OK = {
    positive: function (x) { return x > 0; },
    nonnegative: function (x) { return x >= 0; },
    positive_integer: function (x) { return x >= 1 && Number.isInteger(x); },
    nonnegative_integer: function (x) { return x >= 0 && Number.isInteger(x); },
    fraction: function (x) { return x >= 0 && x <= 1; },
    positive_fraction: function (x) { return x > 0 && x <= 1; },
    fraction_below_one: function (x) { return x >= 0 && x < 1; },
    ge_one: function (x) { return x >= 1; },
    ge_two_integer: function (x) { return x >= 2 && Number.isInteger(x); },
    real: function () { return true; }
  };
  function checkDomain(name, x, spec) {
    if (!DOMAIN_OK[spec.domain](x)) {
      var unit = (spec.unit === "1" || spec.unit === "") ? "" : " " + spec.unit;
      throw new InputError("--set " + name, "expected " + DOMAIN_TEXT[spec.domain] + unit + ", got " + x);
    }
  }

  // ------------------------------------------------------------------ the formula graph (engine/calculators.py Graph)
  function lib() { return window.AIINFRA_FORMULAS; }

  function Graph() {
    var L = lib();
    this.formulas = L.meta;
    this.producer = L.graph.producer;
    this.symbols = L.graph.symbols;
    this.units = L.graph.units;
  }
  Graph.prototype.spec = function (name) {
    if (Object.prototype.hasOwnProperty.call(this.symbols, name)) return this.symbols[name];
    var out = this.formulas[this.producer[name]].output;
    return {desc: out.desc, unit: out.unit, domain: "real", values: [], "default": null, default_source: ""};
  };
  Graph.prototype.produced = function (name) { return Object.prototype.hasOwnProperty.call(this.producer, name); };
  Graph.prototype.defaultOf = function (name) {
    return Object.prototype.hasOwnProperty.call(this.symbols, name) ? this.symbols[name]["default"] : null;
  };
  Graph.prototype.inputsOf = function (fid) {
    var meta = this.formulas[fid], out = meta.selector ? [meta.selector] : [];
    Object.keys(meta.variants).forEach(function (k) { out = out.concat(meta.variants[k].inputs); });
    return out;
  };
  Graph.prototype.upstream = function (names) {
    var seen = {}, todo = names.slice();
    while (todo.length) {
      var fid = this.producer[todo.pop()];
      if (fid === undefined) continue;
      var self = this;
      this.inputsOf(fid).forEach(function (n) { if (!seen[n]) { seen[n] = true; todo.push(n); } });
    }
    return seen;
  };

  function callVariant(fid, key, values) {
    var meta = lib().meta[fid], variant = meta.variants[key];
    var args = variant.inputs.map(function (n) { return values[n]; });
    var value = lib().fn[fid + "|" + key].apply(null, args);
    if (typeof value === "boolean") value = value ? 1 : 0;
    if (!isFinite(value)) throw new InputError(fid, "the result is not a finite number (" + value + ")");
    return value;
  }

  // ------------------------------------------------------------------ a calculator run (engine/calculators.py run)
  function Plan(calc, graph, given) {
    this.calc = calc; this.graph = graph; this.given = given;
    this.values = {}; this.inputs = {}; this.selectors = {}; this.computed = {}; this.order = [];
    this.active = []; this.missing = {}; this.used = {};
  }
  Plan.prototype.has = function (obj, k) { return Object.prototype.hasOwnProperty.call(obj, k); };
  Plan.prototype.snapshot = function () {
    var copy = function (o) { var c = {}; for (var k in o) c[k] = o[k]; return c; };
    return [copy(this.inputs), copy(this.values), copy(this.selectors), copy(this.computed), this.order.slice(), copy(this.used), this.active.slice()];
  };
  Plan.prototype.restore = function (s) {
    this.inputs = s[0]; this.values = s[1]; this.selectors = s[2]; this.computed = s[3]; this.order = s[4]; this.used = s[5]; this.active = s[6].slice();
  };
  Plan.prototype.declared = function (name) { return this.has(this.calc.inputs, name) ? this.calc.inputs[name] : null; };
  Plan.prototype.need = function (name, output) {
    if (this.computed[name]) return;
    if (this.has(this.inputs, name)) { this.used[name] = true; return; }
    var g = this.graph, declared = this.declared(name);
    var derivable = g.produced(name) && !this.has(this.given, name);
    var derive = derivable && (output || (!declared && g.defaultOf(name) === null));
    if (derivable && !derive && declared && (declared["default"] === undefined || declared["default"] === null) && g.defaultOf(name) === null) {
      var saved = this.snapshot();
      try { this.need(name, true); return; } catch (exc) {
        if (!exc.missing) throw exc;
        this.restore(saved);
        var inner = exc.field.replace(/^--set /, "");
        try { this.leaf(name); } catch (mine) {
          if (!mine.missing) throw mine;
          throw new Missing(mine.field, mine.message + "; or give " + inner + " to derive it (" + g.producer[name] + ")");
        }
        this.used[name] = true;
        return;
      }
    }
    if (!derive) { this.leaf(name); this.used[name] = true; return; }
    var fid = g.producer[name];
    if (this.active.indexOf(fid) >= 0) throw new InputError(fid, "is part of a cycle of formulas");
    this.active.push(fid);
    var meta = g.formulas[fid], key = "";
    if (meta.selector) {
      this.need(meta.selector);
      key = this.selectors[meta.selector];
      if (!this.has(meta.variants, key)) throw new InputError("--set " + meta.selector, "'" + key + "' is not a variant of " + fid);
    }
    var self = this;
    meta.variants[key].inputs.forEach(function (n) { self.need(n); });
    this.active.pop();
    this.order.push([fid, key]);
    this.computed[name] = true;
  };
  Plan.prototype.leaf = function (name) {
    var g = this.graph, spec = g.spec(name), declared = this.declared(name) || {}, raw, source;
    if (this.has(this.given, name)) { raw = this.given[name]; source = "user"; }
    else if (declared["default"] !== undefined && declared["default"] !== null) { raw = declared["default"]; source = "default: " + declared.source; }
    else if (g.defaultOf(name) !== null) { raw = g.defaultOf(name); source = "default: " + spec.default_source; }
    else {
      var desc = declared.description || spec.desc;
      var unit = (spec.unit !== "" && spec.unit !== "1") ? spec.unit + ", " : "";
      throw new Missing("--set " + name, this.calc.id + " needs a value for " + name + " (" + unit + desc + ")");
    }
    if (spec.values && spec.values.length) {
      var value = String(raw).trim();
      if (spec.values.indexOf(value) < 0) throw new InputError("--set " + name, "'" + value + "' is not one of " + spec.values.join(", "));
      this.selectors[name] = value;
      this.inputs[name] = {value: value, unit: "", source: source};
      return;
    }
    var x = Array.isArray(raw) ? raw[0] : (typeof raw === "number" ? raw : parseDeclared(name, raw, this.calc));
    checkDomain(name, x, spec);
    this.values[name] = x;
    this.inputs[name] = {value: x, unit: spec.unit, source: source};
  };

  // A declared default such as "16" or "0.9" in the symbol's own unit; the site writes every
  // other default as a number already scaled to the declared unit.
  function parseDeclared(name, raw, calc) {
    var scaled = calc.scaled_defaults && calc.scaled_defaults[name];
    if (scaled !== undefined) return scaled;
    var x = Number(String(raw).trim());
    if (!isFinite(x)) throw new InputError("--set " + name, "'" + raw + "' is not a number");
    return x;
  }

  function refuse(calc, selectors) {
    (calc.refuse || []).forEach(function (rule) {
      var keys = Object.keys(rule.when);
      var hit = keys.every(function (k) {
        var allowed = typeof rule.when[k] === "string" ? [rule.when[k]] : rule.when[k];
        return Object.prototype.hasOwnProperty.call(selectors, k) && allowed.indexOf(selectors[k]) >= 0;
      });
      if (hit) {
        var shown = keys.map(function (k) { return k + "=" + selectors[k]; }).join(", ");
        throw new InputError("--set " + keys[0], shown + " is refused: " + rule.message);
      }
    });
  }

  function selectorDefaults(calc, g) {
    var out = {};
    (calc.refuse || []).forEach(function (rule) {
      Object.keys(rule.when).forEach(function (key) {
        var declared = calc.inputs[key], value = declared ? declared["default"] : undefined;
        if ((value === undefined || value === null) && (g.produced(key) || Object.prototype.hasOwnProperty.call(g.symbols, key))) value = g.defaultOf(key);
        if (typeof value === "string") out[key] = value;
      });
    });
    return out;
  }

  function runCalculator(calc, given) { return planCalculator(calc, given).run(); }

  // The plan of a run (engine/numeric/calc_run.py _planned): which formulas, in which order; run()
  // evaluates it. Solving for an input plans once and evaluates the order at many values.
  function planCalculator(calc, given) {
    var g = new Graph();
    var plan = new Plan(calc, g, given);
    Object.keys(given).forEach(function (n) { plan.leaf(n); });
    var merged = selectorDefaults(calc, g);
    for (var sk in plan.selectors) merged[sk] = plan.selectors[sk];
    refuse(calc, merged);
    var givenProduced = Object.keys(given).filter(function (n) { return g.produced(n); });
    var upstream = g.upstream(givenProduced);
    var optional = (calc.optional_outputs || []).filter(function (n) { return calc.outputs.indexOf(n) < 0; });
    var wanted = calc.outputs.concat(optional), skipped = [];
    var feeding = g.upstream(wanted);
    wanted.forEach(function (name) {
      if (!feeding[name] && !upstream[name] && optional.indexOf(name) < 0) { plan.need(name, true); return; }
      var saved = plan.snapshot();
      try { plan.need(name, true); } catch (exc) {
        if (!exc.missing) throw exc;
        plan.restore(saved);
        skipped.push(name);
        if (!upstream[name]) plan.missing[name] = exc.field.replace(/^--set /, "");
      }
    });
    wanted = wanted.filter(function (n) { return skipped.indexOf(n) < 0; });
    refuse(calc, plan.selectors);
    return {plan: plan, graph: g, wanted: wanted, skipped: skipped, optional: optional,
            run: function () { return finishRun(calc, given, plan, g, wanted, skipped, optional); }};
  }

  function finishRun(calc, given, plan, g, wanted, skipped, optional) {
    var unused = Object.keys(given).filter(function (n) { return !plan.used[n]; });
    var context = {};
    unused.forEach(function (n) { if (plan.has(plan.values, n)) context[n] = plan.values[n]; });
    for (var key in plan.selectors) {
      var text = String(plan.selectors[key]).trim();
      if (text !== "" && isFinite(Number(text))) context[key] = Number(text);
    }
    unused.forEach(function (n) { delete plan.inputs[n]; delete plan.values[n]; });
    var point = {};
    for (var k in plan.values) point[k] = plan.values[k];
    plan.order.forEach(function (step) {
      point[g.formulas[step[0]].output.symbol] = callVariant(step[0], step[1], point);
    });
    var outputs = {};
    wanted.forEach(function (name) { outputs[name] = {value: plan.has(plan.values, name) ? plan.values[name] : point[name], unit: g.units[name]}; });
    var scope = {};
    for (var c in context) scope[c] = context[c];
    for (var p in point) scope[p] = point[p];
    var warnings = [];
    (calc.failure_boundaries || []).forEach(function (fb) {
      var cond = lib().conditions[fb.key];
      if (cond.used.some(function (n) { return !(n in scope); })) return;
      if (cond.fn.apply(null, cond.used.map(function (n) { return scope[n]; }))) warnings.push(fb.message + " (" + fb.when + ")");
    });
    skipped.forEach(function (name) {
      if (optional.indexOf(name) >= 0) return;
      var why = plan.has(plan.missing, name) ? "needs " + plan.missing[name] : "upstream of a symbol given directly";
      warnings.push("not computed: " + name + " (" + why + "; the outputs above do not depend on it)");
    });
    if (unused.length) warnings.push("not used by this chain: " + unused.join(", ") + " (a symbol given directly, or a selector, made it unnecessary)");
    return {inputs: plan.inputs, outputs: outputs, formulas: plan.order.map(function (s) { return s[0]; }), warnings: warnings};
  }

  // ------------------------------------------------------------------ one formula (engine/evaluate.py evaluate)
  function runFormula(fid, given) {
    var meta = lib().meta[fid], symbols = meta.symbols, key = "";
    var inputs = {}, values = {};
    Object.keys(given).forEach(function (name) {
      if (!Object.prototype.hasOwnProperty.call(symbols, name)) throw new InputError("--set " + name, "is not an input of " + fid);
    });
    if (meta.selector) {
      var sel = meta.selector, spec = symbols[sel];
      key = given[sel] !== undefined ? String(given[sel]).trim() : spec["default"];
      if (key === null || key === undefined) throw new Missing("--set " + sel, fid + " needs " + sel + ", one of " + spec.values.join(", "));
      if (spec.values.indexOf(key) < 0) throw new InputError("--set " + sel, "'" + key + "' is not one of " + spec.values.join(", "));
      inputs[sel] = {value: key, unit: "", source: given[sel] !== undefined ? "given" : "default: " + spec.default_source};
    }
    var missing = [];
    meta.variants[key].inputs.forEach(function (name) {
      var spec = symbols[name], x, source;
      if (given[name] !== undefined) { x = given[name]; source = "given"; }
      else if (spec["default"] !== null) { x = spec["default"][0]; source = "default: " + spec.default_source; }
      else { missing.push(name); return; }
      checkDomain(name, x, spec);
      values[name] = x;
      inputs[name] = {value: x, unit: spec.unit, source: source};
    });
    if (missing.length) {
      throw new Missing("--set " + missing[0], fid + " needs a value for " + missing.map(function (n) { return n + " (" + symbols[n].unit + ", " + symbols[n].desc + ")"; }).join("; "));
    }
    var outputs = {};
    outputs[meta.output.symbol] = {value: callVariant(fid, key, values), unit: meta.output.unit};
    return {inputs: inputs, outputs: outputs, formulas: [fid], warnings: []};
  }

  // ------------------------------------------------------------------ solve for an input (engine/numeric/calc_solve.py, calc_bracket.py)
  // The calculator is planned as for a run with the solved input as a leaf (at the CLI's placeholder),
  // then its chain is evaluated as a function of that input alone. Where each condition holds comes
  // from samples of the input's domain (4 per decade from 1e-12 to 1e30, or 201 points of a
  // fraction), each change between neighbours narrowed by bisection to the float step: the numeric
  // bracket the CLI uses where SymPy has no closed form (its closed forms agree with it to 1e-9).
  var FRACTIONS = {fraction: [true, true], positive_fraction: [false, true], fraction_below_one: [true, false]};
  var LOWER = {nonnegative: 0, nonnegative_integer: 0, positive: 0, positive_integer: 0, ge_one: 1, ge_two_integer: 2};
  var CLOSED_LOWER = {nonnegative: true, nonnegative_integer: true, ge_one: true, ge_two_integer: true};
  var INTEGER = {positive_integer: true, nonnegative_integer: true, ge_two_integer: true};
  var PLACEHOLDER = {fraction: 0.5, positive_fraction: 0.5, fraction_below_one: 0.5, ge_two_integer: 2};
  var TOLERANCE = 1e-12;
  var SOLVE_NOTE = "numeric: bracketed in your browser between samples of the domain (4 per decade from 1e-12 to 1e30, " +
    "or 201 points of a fraction) and narrowed by bisection to the float step; the command line prints the closed form where SymPy finds one";

  function samples(domain) {
    var out = [], i, k;
    if (FRACTIONS[domain]) {
      for (i = 0; i <= 200; i++) if ((i > 0 || FRACTIONS[domain][0]) && (i < 200 || FRACTIONS[domain][1])) out.push(i / 200);
      return out;
    }
    var ups = [];
    for (k = -48; k <= 120; k++) ups.push(Math.pow(10, k / 4));
    if (Object.prototype.hasOwnProperty.call(LOWER, domain)) {
      var lo = LOWER[domain];
      if (CLOSED_LOWER[domain]) out.push(lo);
      ups.forEach(function (u) { out.push(lo + u); });
      return out;
    }
    for (i = ups.length - 1; i >= 0; i--) out.push(-ups[i]);
    out.push(0);
    return out.concat(ups);
  }

  function domainPiece(domain) {
    if (FRACTIONS[domain]) return [0, 1, FRACTIONS[domain][0], FRACTIONS[domain][1]];
    if (Object.prototype.hasOwnProperty.call(LOWER, domain)) return [LOWER[domain], Infinity, !!CLOSED_LOWER[domain], false];
    return [-Infinity, Infinity, false, false];
  }

  function holds(value, relation, bound) {
    if (value === null) return false;
    if (relation === ">=") return value >= bound;
    if (relation === "<=") return value <= bound;
    return Math.abs(value - bound) <= TOLERANCE * Math.max(1, Math.abs(bound));
  }

  // the x in [a, b] where test changes, to the float step (test(a) != test(b))
  function narrow(fn, a, b, test) {
    var ta = test(fn(a));
    for (var i = 0; i < 2000; i++) {
      var mid = (a + b) / 2;
      if (mid === a || mid === b) break;
      if (test(fn(mid)) === ta) a = mid; else b = mid;
    }
    return [a, b];
  }

  function regionOf(fn, domain, relation, bound) {
    if (relation === "=") return equalRegion(fn, domain, bound);
    var xs = samples(domain), test = function (v) { return holds(v, relation, bound); };
    var states = xs.map(function (x) { return test(fn(x)); }), edges = [];
    for (var i = 0; i + 1 < xs.length; i++) {
      if (states[i] === states[i + 1]) continue;
      var ab = narrow(fn, xs[i], xs[i + 1], test), r = tidy((ab[0] + ab[1]) / 2, ab), v = fn(r);
      edges.push([r, v !== null && (Math.abs(v - bound) <= TOLERANCE * Math.max(1, Math.abs(bound)) || test(v))]);
    }
    return piecesFrom(domain, states[0], edges);
  }

  // The compiled chain takes a step's argument within 1e-9 relative of a whole number as that number
  // (engine/core/codegen.py), so a boundary through floor/ceiling is found up to 1e-9 past the exact
  // one (12288.0000123 for 12,288 tokens): an edge that close to a number of 10 significant digits is
  // that number, as SymPy's exact set has it.
  function tidy(r, ab) {
    if (r === 0 || !isFinite(r)) return r;
    var t = Number(r.toPrecision(10));
    return Math.abs(t - r) <= 1e-9 * Math.abs(r) && (t < ab[0] || t > ab[1] || t === r) ? t : r;
  }

  function piecesFrom(domain, first, edges) {
    var d = domainPiece(domain), out = [], state = first, start = d[0], startIn = d[2];
    edges.forEach(function (e) {
      if (state) out.push([start, e[0], startIn, e[1]]);
      state = !state; start = e[0]; startIn = e[1];
    });
    if (state) out.push([start, d[1], startIn, d[3]]);
    return out;
  }

  function equalRegion(fn, domain, bound) {
    var plateaus = intersect(regionOf(fn, domain, ">=", bound), regionOf(fn, domain, "<=", bound)).filter(function (p) { return p[0] < p[1]; });
    var xs = samples(domain), tol = TOLERANCE * Math.max(1, Math.abs(bound)), found = [];
    var gs = xs.map(function (x) { var v = fn(x); return v === null ? null : v - bound; });
    for (var i = 0; i < xs.length; i++) {
      if (gs[i] !== null && Math.abs(gs[i]) <= tol) { found.push(xs[i]); continue; }
      if (i + 1 < xs.length && gs[i] !== null && gs[i + 1] !== null && gs[i] * gs[i + 1] < 0) {
        var ab = narrow(fn, xs[i], xs[i + 1], function (v) { return v !== null && v > bound; });
        var r = Math.abs(fn(ab[0]) - bound) <= Math.abs(fn(ab[1]) - bound) ? ab[0] : ab[1], got = fn(r);
        if (got !== null && Math.abs(got - bound) <= Math.max(tol, 1e-9 * Math.max(1, Math.abs(bound)))) found.push(r);
      }
    }
    var points = found.filter(function (x) { return !plateaus.some(function (p) { return p[0] <= x && x <= p[1]; }); })
      .map(function (x) { return [x, x, true, true]; });
    return plateaus.concat(points).sort(function (p, q) { return p[0] - q[0] || p[1] - q[1]; });
  }

  function intersect(a, b) {
    var out = [];
    a.forEach(function (p) {
      b.forEach(function (q) {
        var lo, li, hi, hin;
        if (p[0] > q[0]) { lo = p[0]; li = p[2]; } else if (q[0] > p[0]) { lo = q[0]; li = q[2]; } else { lo = p[0]; li = p[2] && q[2]; }
        if (p[1] < q[1]) { hi = p[1]; hin = p[3]; } else if (q[1] < p[1]) { hi = q[1]; hin = q[3]; } else { hi = p[1]; hin = p[3] && q[3]; }
        if (lo < hi || (lo === hi && li && hin)) out.push([lo, hi, li, hin]);
      });
    });
    return out.sort(function (p, q) { return p[0] - q[0] || p[1] - q[1]; });
  }

  function wholeNumbers(pieces, check) {
    var out = [];
    pieces.forEach(function (p) {
      var lo = p[0], hi = p[1];
      var a = !isFinite(lo) ? lo : (!(p[2] === false && Number.isInteger(lo)) ? Math.ceil(lo) : lo + 1);
      var b = !isFinite(hi) ? hi : (!(p[3] === false && Number.isInteger(hi)) ? Math.floor(hi) : hi - 1);
      for (var i = 0; i < 2; i++) {
        if (isFinite(a) && a <= b && !check(a)) a += 1;
        if (isFinite(b) && a <= b && !check(b)) b -= 1;
      }
      if (a <= b) out.push([a, b, isFinite(a), isFinite(b)]);
    });
    return out;
  }

  function g10(v) {  // Python's format(v, ".10g")
    if (v === 0) return "0";
    var parts = v.toExponential(9).split("e"), exp = Number(parts[1]), strip = function (t) {
      return t.indexOf(".") >= 0 ? t.replace(/0+$/, "").replace(/\.$/, "") : t;
    };
    if (exp < -4 || exp >= 10) return strip(parts[0]) + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    return strip(v.toFixed(Math.max(0, 9 - exp)));
  }
  function endText(v) { return v === Infinity ? "inf" : v === -Infinity ? "-inf" : g10(v); }
  function piecesText(pieces) {
    if (!pieces.length) return "empty";
    return pieces.map(function (p) {
      return p[0] === p[1] ? "{" + g10(p[0]) + "}" : (p[2] ? "[" : "(") + endText(p[0]) + ", " + endText(p[1]) + (p[3] ? "]" : ")");
    }).join(" \u222a ");
  }

  // condition text as the CLI's Condition prints it: "OUTPUT >= 32" (+ unit)
  function conditionText(c) {
    return c.output + " " + c.relation + " " + g10(c.bound) + (c.unit === "" || c.unit === "1" ? "" : " " + c.unit);
  }

  function solveCalculator(calc, given, target, conditions) {
    var g = new Graph();
    if (!(Object.prototype.hasOwnProperty.call(g.symbols, target) || g.produced(target))) {
      throw new InputError("--solve", "'" + target + "' is not a formula symbol (the inputs of " + calc.id + ": " + Object.keys(calc.inputs).join(", ") + ")");
    }
    var spec = g.spec(target);
    if (spec.values && spec.values.length) throw new InputError("--solve", target + " is categorical (one of " + spec.values.join(", ") + "); --solve takes a numeric input");
    if (Object.prototype.hasOwnProperty.call(given, target)) throw new InputError("--set " + target, "is the input being solved for (--solve); leave it out");
    if (!conditions.length) throw new InputError("--where", "give at least one condition, e.g. --where 'OUTPUT >= V'");
    conditions.forEach(function (c) {
      if (!g.produced(c.output)) throw new InputError("--where", c.output + " is not an output of any formula");
      if (c.output === target) throw new InputError("--where", c.output + " is the input being solved for; name an output");
      c.unit = g.units[c.output];
    });
    var withTarget = {};
    for (var k in given) withTarget[k] = given[k];
    withTarget[target] = Object.prototype.hasOwnProperty.call(PLACEHOLDER, spec.domain) ? PLACEHOLDER[spec.domain] : 1;
    var planned = planCalculator(calc, withTarget), plan = planned.plan;
    if (!plan.used[target]) throw new InputError("--solve", target + " is not used by " + calc.id + "'s chain with these inputs (a symbol given directly or a selector made it unnecessary): nothing depends on it");
    var need = {}, order = [];
    conditions.forEach(function (c) { need[c.output] = true; });
    for (var i = plan.order.length - 1; i >= 0; i--) {
      var meta = g.formulas[plan.order[i][0]];
      if (!need[meta.output.symbol]) continue;
      order.unshift(plan.order[i]);
      meta.variants[plan.order[i][1]].inputs.forEach(function (n) { need[n] = true; });
    }
    var computed = {};
    order.forEach(function (step) { computed[g.formulas[step[0]].output.symbol] = true; });
    conditions.forEach(function (c) {
      if (plan.has(plan.values, c.output)) throw new InputError("--where", c.output + " is given, so " + calc.id + " does not compute it; leave it out to solve through it");
      if (!computed[c.output]) throw new InputError("--where", c.output + " is not computed by " + calc.id + " with these inputs (given directly, or not on its chain)");
    });
    var deps = {};  // output -> the leaves it is computed from along this order
    order.forEach(function (step) {
      var d = {};
      g.formulas[step[0]].variants[step[1]].inputs.forEach(function (n) {
        d[n] = true;
        for (var m in (deps[n] || {})) d[m] = true;
      });
      deps[g.formulas[step[0]].output.symbol] = d;
    });
    var chain = order.map(function (s) { return s[0]; }).join(" -> ");
    conditions.forEach(function (c) {
      if (!deps[c.output][target]) throw new InputError("--where", c.output + " does not depend on " + target + " in " + calc.id + "'s chain (" + chain + ")");
    });
    var base = {};
    for (var n in plan.values) base[n] = plan.values[n];
    var fnOf = function (output) {
      return function (x) {
        var point = {};
        for (var b in base) point[b] = base[b];
        point[target] = x;
        try {
          order.forEach(function (step) { point[g.formulas[step[0]].output.symbol] = callVariant(step[0], step[1], point); });
        } catch (exc) {
          if (exc instanceof InputError || exc instanceof Missing) return null;
          throw exc;
        }
        var v = point[output];
        return typeof v === "number" && isFinite(v) ? v : null;
      };
    };
    var domain = spec.domain, whole = domainPiece(domain), pieces = [whole];
    // The CLI finds a cancellation symbolically; here it shows as one value (to 1e-12) at every sample of the
    // domain, which a saturated output (a Min at its cap) shares: either way no condition on it picks an input.
    conditions.forEach(function (c) {
      var f = fnOf(c.output), lo = Infinity, hi = -Infinity;
      samples(domain).forEach(function (x) { var v = f(x); if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
      if (lo <= hi && hi - lo <= 1e-12 * Math.max(Math.abs(lo), Math.abs(hi))) {
        throw new InputError("--where", c.output + " does not depend on " + target + " over its domain in " + calc.id + "'s chain (" + chain + "): " +
                             c.output + " = " + g10(lo) + " for every " + target + " sampled");
      }
    });
    var answers = conditions.map(function (c) {
      var own = regionOf(fnOf(c.output), domain, c.relation, c.bound);
      pieces = intersect(pieces, own);
      return {condition: c, text: c.text || conditionText(c), pieces: own, interval: piecesText(own), direction: direction(fnOf(c.output), domain)};
    });
    if (INTEGER[domain]) {
      var fns = conditions.map(function (c) { return [fnOf(c.output), c]; });
      pieces = wholeNumbers(pieces, function (x) { return fns.every(function (f) { return holds(f[0](x), f[1].relation, f[1].bound); }); });
    }
    var sol = {calculator: calc.id, solve: target, unit: spec.unit, domain: domain, method: "numeric", pieces: pieces,
               interval: piecesText(pieces), value: null, binding: {}, conditions: answers, at_answer: {}, notes: [SOLVE_NOTE],
               inputs: {}};
    for (var name in plan.inputs) if (name !== target) sol.inputs[name] = plan.inputs[name];
    valueAndBinding(sol, whole);
    if (sol.value !== null && isFinite(sol.value)) conditions.forEach(function (c) { sol.at_answer[c.output] = fnOf(c.output)(sol.value); });
    return sol;
  }

  // The output's direction in the input over the domain's samples (the CLI reads the direction the engine
  // proves, engine/numeric/directions.json; a monotone chain gives the same here): which end a condition bounds.
  function direction(fn, domain) {
    var prev = null, up = false, down = false;
    samples(domain).forEach(function (x) {
      var v = fn(x);
      if (v === null) return;
      if (prev !== null) { if (v > prev) up = true; if (v < prev) down = true; }
      prev = v;
    });
    return up && !down ? "increasing" : down && !up ? "decreasing" : null;
  }
  var SIDE = {">=|increasing": 0, ">=|decreasing": 1, "<=|increasing": 1, "<=|decreasing": 0};

  // the one bound end of the feasible set and the condition that binds it (calc_solve._value_and_binding)
  function valueAndBinding(sol, domain) {
    if (!sol.pieces.length) { sol.notes.push("no value of " + sol.solve + " in its domain (" + sol.domain + ") satisfies every condition"); return; }
    if (sol.pieces.length > 1) { sol.notes.push("the conditions hold on several separate intervals"); return; }
    var p = sol.pieces[0];
    if (p[0] === p[1]) {
      sol.value = p[0];
      var w = binding(sol, p[0], 0) || binding(sol, p[0], 1);
      if (w) sol.binding.value = w;
      return;
    }
    var sides = {};
    sol.conditions.forEach(function (a) {
      var key = a.condition.relation + "|" + a.direction;
      if (Object.prototype.hasOwnProperty.call(SIDE, key)) sides[SIDE[key]] = true;
    });
    if (!Object.keys(sides).length) { if (p[0] !== domain[0]) sides[0] = true; if (p[1] !== domain[1]) sides[1] = true; }
    [[p[0], 0], [p[1], 1]].forEach(function (e) {
      if (!sides[e[1]] || !isFinite(e[0])) return;
      var which = binding(sol, e[0], e[1]);
      if (which) sol.binding[e[1] === 0 ? "low" : "high"] = which;
    });
    var keys = Object.keys(sol.binding);
    if (keys.length === 1) sol.value = keys[0] === "low" ? p[0] : p[1];
  }

  function binding(sol, end, index) {
    var best = null, gap = Infinity, slack = INTEGER[sol.domain] ? 1 : 0;
    sol.conditions.forEach(function (a) {
      a.pieces.forEach(function (p) {
        var d = Math.abs(p[index] - end);
        if (isFinite(d) && d < gap && d <= Math.max(slack, 1e-9 * Math.max(1, Math.abs(end)))) { best = a.text; gap = d; }
      });
    });
    return best;
  }

  // ------------------------------------------------------------------ forms
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    for (var k in (attrs || {})) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  function fieldValue(form, field) {
    var input = form.querySelector('[data-field="' + field.name + '"]');
    var text = input.value.trim();
    if (text === "") return undefined;
    if (field.values && field.values.length) return text;
    var x = Number(text);
    if (!isFinite(x)) throw new InputError("--set " + field.name, "'" + text + "' is not a number");
    var unit = form.querySelector('[data-unit-for="' + field.name + '"]');
    var factor = unit ? Number(unit.value) : 1;
    return factor === 1 ? x : x * factor;
  }

  function fieldsTable(fields) {
    var table = el("table", {"class": "aiinfra-form__inputs"});
    table.appendChild(el("thead", {}, [el("tr", {}, [el("th", {text: "input"}), el("th", {text: "value"}), el("th", {text: "unit"}), el("th", {text: "meaning"})])]));
    var body = el("tbody");
    fields.forEach(function (field) {
      var control;
      if (field.values && field.values.length) {
        control = el("select", {"data-field": field.name, name: field.name});
        if (field.optional) control.appendChild(el("option", {value: "", text: "(default)"}));
        field.values.forEach(function (v) {
          var opt = el("option", {value: v, text: v});
          if (v === field.initial) opt.selected = true;
          control.appendChild(opt);
        });
      } else {
        control = el("input", {"data-field": field.name, name: field.name, type: "text", inputmode: "decimal",
                               placeholder: field.placeholder || "", size: "14"});
        if (field.initial !== undefined && field.initial !== null) control.value = field.initial;
      }
      var unitCell;
      if (field.units && field.units.length > 1) {
        unitCell = el("select", {"data-unit-for": field.name, "aria-label": field.name + " unit"});
        field.units.forEach(function (u, i) {
          var opt = el("option", {value: String(u[1]), text: u[0]});
          if (i === 0) opt.selected = true;
          unitCell.appendChild(opt);
        });
      } else {
        unitCell = el("span", {text: field.unit || ""});
      }
      body.appendChild(el("tr", {}, [
        el("td", {}, [el("code", {text: field.name})]), el("td", {}, [control]), el("td", {}, [unitCell]),
        el("td", {text: field.desc || ""})
      ]));
    });
    table.appendChild(body);
    return table;
  }

  function buildForm(host, spec) {
    var form = el("form", {"class": "aiinfra-form__form", autocomplete: "off", "data-kind": spec.kind, "data-id": spec.id});
    form.appendChild(fieldsTable(spec.fields));
    if (spec.derived_fields && spec.derived_fields.length) {
      form.appendChild(el("details", {"class": "aiinfra-form__derived"}, [
        el("summary", {text: "Values the chain derives: give one directly to skip its formula (advanced)"}), fieldsTable(spec.derived_fields)]));
    }
    if (spec.solve) form.appendChild(solveFieldset(spec));
    var button = el("button", {type: "submit", "class": "md-button md-button--primary aiinfra-form__run", text: "Compute"});
    form.appendChild(button);
    var result = el("div", {"class": "aiinfra-form__result", "aria-live": "polite"});
    form.appendChild(result);
    var id = spec.kind + ":" + spec.id;
    var go = function () { compute(form, spec, result); if (form.getAttribute("data-state") === "ok") saveState(form, id); };
    form.addEventListener("submit", function (event) { event.preventDefault(); go(); });
    form.addEventListener("change", go);
    host.appendChild(form);
    restoreState(form, id);
    compute(form, spec, result);
  }

  // "Solve for": one numeric input against up to two conditions on the outputs (calc ID --solve X --where ...)
  function solveFieldset(spec) {
    var box = el("fieldset", {"class": "aiinfra-solve"}, [el("legend", {text: "Solve for an input (optional)"})]);
    var target = el("select", {"data-solve-target": "1", "aria-label": "input to solve for"});
    target.appendChild(el("option", {value: "", text: "(nothing: compute the outputs)"}));
    spec.solve.targets.forEach(function (n) { target.appendChild(el("option", {value: n, text: n})); });
    if (spec.solve.derived.length) {
      var group = el("optgroup", {label: "derived on the way (solving for one replaces its formula)"});
      spec.solve.derived.forEach(function (n) { group.appendChild(el("option", {value: n, text: n})); });
      target.appendChild(group);
    }
    box.appendChild(el("p", {}, [document.createTextNode("solve for "), target]));
    [0, 1].forEach(function (i) {
      var output = el("select", {"data-solve-output": String(i), "aria-label": "condition " + (i + 1) + " output"});
      if (i > 0) output.appendChild(el("option", {value: "", text: "(no second condition)"}));
      spec.solve.outputs.forEach(function (o) { output.appendChild(el("option", {value: o.name, text: o.name})); });
      var relation = el("select", {"data-solve-relation": String(i), "aria-label": "condition " + (i + 1) + " relation"});
      [">=", "<=", "="].forEach(function (r) { relation.appendChild(el("option", {value: r, text: r})); });
      var bound = el("input", {"data-solve-bound": String(i), type: "text", inputmode: "decimal", size: "14", "aria-label": "condition " + (i + 1) + " value",
                               placeholder: "value"});
      var unit = el("select", {"data-solve-unit": String(i), "aria-label": "condition " + (i + 1) + " unit"});
      var fillUnits = function () {
        unit.textContent = "";
        var o = spec.solve.outputs.filter(function (x) { return x.name === output.value; })[0];
        ((o && o.units.length) ? o.units : [[o ? o.unit : "", 1]]).forEach(function (u) { unit.appendChild(el("option", {value: String(u[1]), text: u[0]})); });
      };
      output.addEventListener("change", fillUnits);
      fillUnits();
      box.appendChild(el("p", {}, [document.createTextNode(i === 0 ? "where " : "and "), output, document.createTextNode(" "), relation,
                                   document.createTextNode(" "), bound, document.createTextNode(" "), unit]));
    });
    return box;
  }

  function solveRequest(form, spec) {
    if (!spec.solve) return null;
    var target = form.querySelector("[data-solve-target]").value;
    if (!target) return null;
    var conditions = [];
    [0, 1].forEach(function (i) {
      var output = form.querySelector('[data-solve-output="' + i + '"]').value;
      var text = form.querySelector('[data-solve-bound="' + i + '"]').value.trim();
      if (!output || (i > 0 && text === "")) return;
      var x = Number(text);
      if (text === "" || !isFinite(x)) throw new InputError("--where", "condition " + (i + 1) + ": give the value " + output + " must reach (a number), got '" + text + "'");
      var bound = x * Number(form.querySelector('[data-solve-unit="' + i + '"]').value);
      var relation = form.querySelector('[data-solve-relation="' + i + '"]').value;
      conditions.push({output: output, relation: relation, bound: bound, text: output + " " + relation + " " + g10(bound)});
    });
    return {target: target, conditions: conditions};
  }

  // the command that gives the same answer: every value in its declared unit, as JavaScript prints a number
  // exactly (the shortest text that reads back to the same double)
  function cliLine(spec, given, request) {
    var parts = ["aiinfra calc " + spec.id.replace(/^calc:/, "")];
    Object.keys(given).forEach(function (n) { parts.push("--set " + n + "=" + String(given[n])); });
    if (request) {
      parts.push("--solve " + request.target);
      request.conditions.forEach(function (c) { parts.push("--where '" + c.text + "'"); });
    }
    return parts.join(" ");
  }

  function showSolution(result, spec, given, request) {
    var sol = solveCalculator(spec.calc, given, request.target, request.conditions);
    var unit = sol.unit === "1" || sol.unit === "" ? "" : " " + sol.unit;
    var ends = sol.pieces.length === 1 ? {"data-low": String(sol.pieces[0][0]), "data-high": String(sol.pieces[0][1])} : {};
    ends["class"] = "aiinfra-solve__interval";
    ends["data-interval"] = sol.interval;
    result.appendChild(el("p", ends,
                           [el("code", {text: sol.solve}), document.createTextNode(" \u2208 " + sol.interval + unit)]));
    if (sol.value !== null) {
      var side = sol.binding.value ? "the one value" : sol.binding.low ? "at least" : "at most";
      var which = sol.binding.value || sol.binding.low || sol.binding.high;
      var shown = friendly(sol.value, sol.unit);
      result.appendChild(el("p", {"class": "aiinfra-solve__value", "data-value": String(sol.value)},
                             [el("strong", {text: side + " " + number(sol.value) + unit + (shown ? " (" + shown + ")" : "")}),
                              document.createTextNode(" \u2014 binding: " + which)]));
      var at = Object.keys(sol.at_answer).map(function (n) { return n + " = " + number(sol.at_answer[n]); });
      if (at.length) result.appendChild(el("p", {text: "There: " + at.join(", ")}));
    } else if (Object.keys(sol.binding).length) {
      result.appendChild(el("p", {text: "Bound by: " + Object.keys(sol.binding).map(function (k) { return k + " end by " + sol.binding[k]; }).join("; ")}));
    }
    sol.conditions.forEach(function (a) { result.appendChild(el("p", {"class": "aiinfra-form__chain", text: a.text + ": " + sol.solve + " \u2208 " + a.interval + (a.direction ? " (output " + a.direction + " in " + sol.solve + ")" : "")})); });
    sol.notes.forEach(function (n) { result.appendChild(el("p", {"class": "aiinfra-form__chain", text: n})); });
    result.appendChild(el("p", {}, [document.createTextNode("Command line: "), el("code", {"class": "aiinfra-solve__cli", text: cliLine(spec.calc, given, request)})]));
    return sol;
  }

  function compute(form, spec, result) {
    result.textContent = "";
    var given = {}, out;
    try {
      var request = spec.kind === "formula" ? null : solveRequest(form, spec);
      spec.fields.concat(spec.derived_fields || []).forEach(function (field) {
        if (request && field.name === request.target) return;
        var v = fieldValue(form, field);
        if (v !== undefined) given[field.name] = v;
      });
      if (request) {
        showSolution(result, spec, given, request);
        form.setAttribute("data-state", "ok");
        return;
      }
      out = spec.kind === "formula" ? runFormula(spec.id, given) : runCalculator(spec.calc, given);
    } catch (exc) {
      if (!(exc instanceof InputError || exc instanceof Missing)) throw exc;
      result.appendChild(el("p", {"class": "aiinfra-form__error", "data-error-field": exc.field, text: exc.field + ": " + exc.message}));
      form.setAttribute("data-state", "error");
      return;
    }
    var table = el("table", {"class": "aiinfra-form__outputs"});
    table.appendChild(el("thead", {}, [el("tr", {}, [el("th", {text: "output"}), el("th", {text: "value"}), el("th", {text: "unit"}), el("th", {text: ""})])]));
    var body = el("tbody");
    Object.keys(out.outputs).forEach(function (name) {
      var o = out.outputs[name];
      body.appendChild(el("tr", {"data-symbol": name, "data-value": String(o.value)}, [
        el("td", {}, [el("code", {text: name})]), el("td", {"class": "aiinfra-value", text: number(o.value)}),
        el("td", {text: o.unit}), el("td", {text: friendly(o.value, o.unit)})
      ]));
    });
    table.appendChild(body);
    result.appendChild(table);
    result.appendChild(el("p", {"class": "aiinfra-form__chain", text: "Formulas: " + out.formulas.join(" \u2192 ")}));
    out.warnings.forEach(function (w) { result.appendChild(el("p", {"class": "aiinfra-form__warning", text: "\u26a0 " + w})); });
    if (spec.kind === "calc") {
      result.appendChild(el("p", {}, [document.createTextNode("Command line: "), el("code", {"class": "aiinfra-form__cli", text: cliLine(spec.calc, given, null)})]));
    }
    form.setAttribute("data-state", "ok");
  }

  // ------------------------------------------------------------------ the form's inputs in the address (a result can be shared)
  // The fragment holds "aiinfra=<JSON>", {form id: {control key: text}}: what was typed, not the numbers, so a
  // shared link refills the form exactly and computes again. Nothing is sent anywhere.
  function controls(form) {
    return Array.prototype.filter.call(form.querySelectorAll("input, select"), function (c) {
      return ["data-field", "data-unit-for", "data-solve-target", "data-solve-output", "data-solve-relation", "data-solve-bound", "data-solve-unit"]
        .some(function (a) { return c.hasAttribute(a); });
    });
  }
  function controlKey(c) {
    var attrs = ["data-field", "data-unit-for", "data-solve-target", "data-solve-output", "data-solve-relation", "data-solve-bound", "data-solve-unit"];
    for (var i = 0; i < attrs.length; i++) if (c.hasAttribute(attrs[i])) return attrs[i].replace(/^data-/, "") + ":" + c.getAttribute(attrs[i]);
    return null;
  }
  function urlState() {
    var m = /(?:^#|&)aiinfra=([^&]*)/.exec(window.location.hash || "");
    if (!m) return {};
    try { var v = JSON.parse(decodeURIComponent(m[1])); return v && typeof v === "object" ? v : {}; } catch (e) { return {}; }
  }
  function saveState(form, id) {
    if (!window.history || !window.history.replaceState) return;
    var state = urlState(), mine = {};
    controls(form).forEach(function (c) { if (c.value !== "") mine[controlKey(c)] = c.value; });
    state[id] = mine;
    var rest = (window.location.hash || "").replace(/^#/, "").split("&").filter(function (p) { return p && p.indexOf("aiinfra=") !== 0; });
    rest.push("aiinfra=" + encodeURIComponent(JSON.stringify(state)));
    window.history.replaceState(null, "", window.location.pathname + window.location.search + "#" + rest.join("&"));
  }
  function restoreState(form, id) {
    var mine = urlState()[id];
    if (!mine) return;
    var list = controls(form);
    // the solve output first: its units follow it
    list.sort(function (a, b) { return (b.hasAttribute("data-solve-output") ? 1 : 0) - (a.hasAttribute("data-solve-output") ? 1 : 0); });
    list.forEach(function (c) {
      var key = controlKey(c);
      if (Object.prototype.hasOwnProperty.call(mine, key)) {
        c.value = String(mine[key]);
        if (c.hasAttribute("data-solve-output")) c.dispatchEvent(new Event("change"));  // refills its units; does not bubble to the form
      } else if (c.hasAttribute("data-field")) {
        c.value = "";
      }
    });
    list.forEach(function (c) {
      var key = controlKey(c);
      if (c.hasAttribute("data-solve-unit") && Object.prototype.hasOwnProperty.call(mine, key)) c.value = String(mine[key]);
    });
  }

  // ------------------------------------------------------------------ tree walks (engine/trees.py _WalkState, Runner.walk)
  function TreeWalk(spec, given) {
    this.spec = spec;
    var formulaGiven = {}, localGiven = {};
    Object.keys(given).forEach(function (n) {
      if (spec.symbols[n] && spec.symbols[n].kind !== "formula") localGiven[n] = given[n]; else formulaGiven[n] = given[n];
    });
    for (var f in spec.fixed) formulaGiven[f] = spec.fixed[f];
    this.localGiven = localGiven;
    this.plan = new Plan(spec.calc, new Graph(), formulaGiven);
    this.values = {}; this.done = 0; this.shown = {}; this.base = {};
  }
  TreeWalk.prototype.info = function (name) {
    var info = this.spec.symbols[name];
    if (!info) throw new InputError("--set " + name, "is not a symbol of " + this.spec.id);
    return info;
  };
  TreeWalk.prototype.read = function (name) {
    if (this.info(name).values.length) this.categorical(name); else this.number(name);
  };
  TreeWalk.prototype.localRaw = function (name, info) {
    if (Object.prototype.hasOwnProperty.call(this.localGiven, name)) return this.localGiven[name];
    if (info["default"] !== null && info["default"] !== undefined) return info["default"];
    var unit = (info.unit !== "" && info.unit !== "1") ? info.unit + ", " : "";
    var kind = info.values.length ? "one of " + info.values.join(", ") + "; " : "";
    throw new Missing("--set " + name, this.spec.id + " needs a value for " + name + " (" + kind + unit + info.desc + ")");
  };
  TreeWalk.prototype.categorical = function (name) {
    if (Object.prototype.hasOwnProperty.call(this.shown, name)) return this.shown[name];
    var info = this.info(name), value;
    if (info.kind === "formula") {
      this.plan.need(name);
      value = this.plan.selectors[name];
    } else {
      value = String(this.localRaw(name, info)).trim();
      if (info.values.indexOf(value) < 0) throw new InputError("--set " + name, "'" + value + "' is not one of " + info.values.join(", "));
    }
    this.shown[name] = value;
    return value;
  };
  TreeWalk.prototype.number = function (name) {
    if (Object.prototype.hasOwnProperty.call(this.base, name)) return this.base[name];
    var info = this.info(name), value;
    if (info.values.length) throw new InputError("--set " + name, "is categorical and cannot be compared as a number");
    if (info.kind === "parameter") {
      value = Object.prototype.hasOwnProperty.call(this.localGiven, name) ? this.localGiven[name] : info["default"];
    } else if (info.kind === "local") {
      value = this.localRaw(name, info);
      checkDomain(name, value, info);
    } else {
      value = this.formula(name);
    }
    this.shown[name] = value;
    this.base[name] = value * info.scale;
    return this.base[name];
  };
  TreeWalk.prototype.formula = function (name) {
    var plan = this.plan, g = plan.graph;
    plan.need(name, this.info(name).produced);
    for (var leaf in plan.values) if (!(leaf in this.values)) this.values[leaf] = plan.values[leaf];
    for (; this.done < plan.order.length; this.done++) {
      var step = plan.order[this.done];
      this.values[g.formulas[step[0]].output.symbol] = callVariant(step[0], step[1], this.values);
    }
    return this.values[name];
  };
  TreeWalk.prototype.run = function (given) {
    var self = this, spec = this.spec, steps = [], current = spec.start;
    Object.keys(given).forEach(function (n) { self.read(n); });
    while (Object.prototype.hasOwnProperty.call(spec.nodes, current)) {
      var node = spec.nodes[current], step;
      if (node.kind === "ask") {
        var value = this.categorical(node.input), target = null;
        node.options.forEach(function (o) { if (o[0] === value && target === null) target = o[1]; });
        if (target === null) throw new InputError(current, "the answer " + node.input + "=" + value + " has no branch");
        step = {node: current, why: node.input + " = " + value, to: target};
      } else {
        var names = {};
        node.branches.forEach(function (b) { lib().conditions[b.key].used.forEach(function (n) { names[n] = true; }); });
        var base = {};
        Object.keys(names).sort().forEach(function (n) { base[n] = self.number(n); });
        step = null;
        for (var i = 0; i < node.branches.length && !step; i++) {
          var c = lib().conditions[node.branches[i].key];
          if (c.fn.apply(null, c.used.map(function (n) { return base[n]; }))) step = {node: current, why: node.branches[i].label || node.branches[i].when, to: node.branches[i].to};
        }
        if (!step && node.otherwise) step = {node: current, why: "otherwise", to: node.otherwise};
        if (!step) throw new InputError(current, "no branch holds (a gap)");
      }
      steps.push(step);
      current = step.to;
      if (steps.length > Object.keys(spec.nodes).length) throw new InputError(spec.id, "the walk loops");
    }
    var leaf = spec.leaves[current], boundary = null;
    if (leaf.boundary) {
      var cond = lib().conditions[leaf.boundary.key];
      try {
        var args = cond.used.map(function (n) { return self.number(n); });
        boundary = {met: !!cond.fn.apply(null, args), when: leaf.boundary.when, message: leaf.boundary.message};
      } catch (exc) {
        if (!(exc instanceof InputError || exc instanceof Missing)) throw exc;
        boundary = {met: null, when: leaf.boundary.when, message: leaf.boundary.message, note: "not evaluated: " + exc.message};
      }
    }
    return {steps: steps, leaf: current, boundary: boundary};
  };

  function walkTree(spec, given) { return new TreeWalk(spec, given).run(given); }

  function buildWalker(host, spec) {
    var form = el("form", {"class": "aiinfra-walker", autocomplete: "off", "data-id": spec.id});
    form.appendChild(fieldsTable(spec.fields));
    form.appendChild(el("button", {type: "submit", "class": "md-button md-button--primary", text: "Walk"}));
    var result = el("div", {"class": "aiinfra-walker__result", "aria-live": "polite"});
    form.appendChild(result);
    var go = function (event) { if (event) event.preventDefault(); showWalk(form, spec, result); };
    form.addEventListener("submit", go);
    form.addEventListener("change", go);
    host.appendChild(form);
    go();
  }

  function showWalk(form, spec, result) {
    result.textContent = "";
    form.removeAttribute("data-leaf");
    try {
      var given = {};
      spec.fields.forEach(function (field) { var v = fieldValue(form, field); if (v !== undefined) given[field.name] = v; });
      var out = walkTree(spec, given);
      var ol = el("ol", {"class": "aiinfra-walker__path"});
      out.steps.forEach(function (p) { ol.appendChild(el("li", {}, [el("code", {text: p.node}), document.createTextNode(" \u2014 " + p.why + " \u2192 " + p.to)])); });
      result.appendChild(ol);
      var leaf = spec.leaves[out.leaf];
      result.appendChild(el("p", {"class": "aiinfra-walker__leaf", "data-leaf": out.leaf}, [el("strong", {text: out.leaf + ": " + leaf.title})]));
      if (leaf.zh) result.appendChild(el("p", {text: leaf.zh}));
      if (out.boundary) {
        var b = out.boundary;
        var text = b.met === null ? b.note : (b.met ? "\u26a0 met: " : "not met: ") + b.message + " (" + b.when + ")";
        result.appendChild(el("p", {"class": b.met ? "aiinfra-form__warning" : "", text: "Failure boundary \u2014 " + text}));
      }
      form.setAttribute("data-leaf", out.leaf);
      form.setAttribute("data-state", "ok");
    } catch (exc) {
      if (!(exc instanceof InputError || exc instanceof Missing)) throw exc;
      result.appendChild(el("p", {"class": "aiinfra-form__error", "data-error-field": exc.field, text: exc.field + ": " + exc.message}));
      form.setAttribute("data-state", "error");
    }
  }

  // ------------------------------------------------------------------ start-up
  function start() {
    if (!window.AIINFRA_FORMULAS) return;
    var hosts = document.querySelectorAll("[data-aiinfra-form]:not([data-ready])");
    Array.prototype.forEach.call(hosts, function (host) {
      host.setAttribute("data-ready", "1");
      var spec = JSON.parse(host.getAttribute("data-aiinfra-form"));
      if (spec.kind === "walker") buildWalker(host, spec); else buildForm(host, spec);
    });
  }

  window.aiinfra = {number: number, friendly: friendly, runCalculator: runCalculator, runFormula: runFormula, walkTree: walkTree,
                    solveCalculator: solveCalculator, start: start};
  if (typeof document !== "undefined") {
    if (window.document$ && window.document$.subscribe) window.document$.subscribe(start);
    else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  }
})();
