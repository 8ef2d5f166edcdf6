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

  function runCalculator(calc, given) {
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
    var button = el("button", {type: "submit", "class": "md-button md-button--primary aiinfra-form__run", text: "Compute"});
    form.appendChild(button);
    var result = el("div", {"class": "aiinfra-form__result", "aria-live": "polite"});
    form.appendChild(result);
    form.addEventListener("submit", function (event) { event.preventDefault(); compute(form, spec, result); });
    form.addEventListener("change", function () { compute(form, spec, result); });
    host.appendChild(form);
    compute(form, spec, result);
  }

  function compute(form, spec, result) {
    result.textContent = "";
    var given = {}, out;
    try {
      spec.fields.forEach(function (field) {
        var v = fieldValue(form, field);
        if (v !== undefined) given[field.name] = v;
      });
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
    form.setAttribute("data-state", "ok");
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

  window.aiinfra = {number: number, friendly: friendly, runCalculator: runCalculator, runFormula: runFormula, walkTree: walkTree, start: start};
  if (typeof document !== "undefined") {
    if (window.document$ && window.document$.subscribe) window.document$.subscribe(start);
    else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  }
})();
