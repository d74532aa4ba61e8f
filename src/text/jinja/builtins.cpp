// Jinja filters and tests (see builtins.h), with jinja2 3.1's argument conventions.
#include "text/jinja/builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "text/jinja/eval.h"

namespace ignis::text::jinja {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

using FilterFn = Value (*)(const Value&, Args&);
using TestFn = bool (*)(const Value&, Args&);

Value markup(std::string s) {
  Value v = Value::string(std::move(s));
  v.b = true;
  return v;
}

bool arg_bool(const Args& a, size_t i, const char* name, bool fallback) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : fallback;
}

Value generator(List items) { return Value::make_list(std::move(items), ListKind::Generator); }

// make_attrgetter: "a.b.0" looks up each part with getitem (digits as integers).
Value attr_path(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    v = get_item(v, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

std::string attribute_arg(const Args& a, size_t i) {
  const Value* v = a.get(i, "attribute");
  if (!v || v->is_none()) return {};
  if (v->type == Type::Int) return std::to_string(v->i);
  return v->str();
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.type == Type::String) return Value::string(py_lower(v.s));
  return v;
}

// ---- filters ----

Value f_default(const Value& v, Args& a) {
  a.check("default", 2, {"default_value", "boolean"});
  bool boolean = arg_bool(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return a.get_or(0, "default_value", Value::string(""));
  return v;
}

Value f_length(const Value& v, Args&) {
  switch (v.type) {
    case Type::Undefined: return Value::integer(0);
    case Type::String: return Value::integer(static_cast<int64_t>(utf8_length(v.s)));
    case Type::List:
      if (v.list_kind == ListKind::Generator) break;
      return Value::integer(static_cast<int64_t>(v.list->size()));
    case Type::Dict: return Value::integer(static_cast<int64_t>(v.dict->items.size()));
    default: break;
  }
  throw_render("object of type '" + v.type_name() + "' has no len()");
}

Value f_tojson(const Value& v, Args& a) {
  a.check("tojson", 5, {"ensure_ascii", "indent", "separators", "sort_keys"});
  int indent = -1;
  std::string indent_str;
  const Value* ind = a.get(1, "indent");
  if (ind && !ind->is_none()) {
    if (ind->type == Type::String) {
      indent = 0;
      indent_str = ind->s;
    } else if (ind->type == Type::Int) {
      indent = static_cast<int>(std::clamp<int64_t>(ind->i, 0, 1024));
      indent_str.assign(static_cast<size_t>(indent), ' ');
    } else {
      throw_render("tojson: indent must be an int or a string");
    }
  }
  std::string item_sep, key_sep;
  const Value* sep = a.get(2, "separators");
  bool has_sep = sep && !sep->is_none();
  if (has_sep) {
    if (sep->type != Type::List || sep->list->size() != 2 || (*sep->list)[0].type != Type::String ||
        (*sep->list)[1].type != Type::String)
      throw_render("tojson: separators must be a pair of strings");
    item_sep = (*sep->list)[0].s;
    key_sep = (*sep->list)[1].s;
  }
  bool sort_keys = arg_bool(a, 3, "sort_keys", false);
  bool ensure_ascii = arg_bool(a, 0, "ensure_ascii", false);
  return Value::string(to_json(v, indent, indent_str, has_sep ? item_sep.c_str() : nullptr,
                               has_sep ? key_sep.c_str() : nullptr, sort_keys, ensure_ascii));
}

Value f_trim(const Value& v, Args& a) {
  const Value* chars = a.get(0, "chars");
  return Value::string(py_strip(v.str(), chars, true, true));
}

Value f_join(const Value& v, Args& a) {
  std::string d = a.get_or(0, "d", Value::string("")).str();
  std::string attr = attribute_arg(a, 1);
  std::string out;
  bool first = true;
  for (const auto& item : iterate(v)) {
    if (!first) out += d;
    first = false;
    out += attr.empty() ? item.str() : attr_path(item, attr).str();
  }
  return Value::string(std::move(out));
}

Value f_upper(const Value& v, Args&) { return Value::string(py_upper(v.str())); }
Value f_lower(const Value& v, Args&) { return Value::string(py_lower(v.str())); }
Value f_capitalize(const Value& v, Args&) {
  Args none;
  return call_value(get_attr(Value::string(v.str()), "capitalize"), none);
}
// jinja2's title: capitalizes words split at whitespace and - ( { [ <.
Value f_title(const Value& v, Args&) {
  std::u32string u = utf8_decode(v.str());
  bool start = true;
  std::string out;
  for (char32_t c : u) {
    bool sep = py_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    std::string one;
    utf8_append(one, c);
    out += sep ? one : (start ? py_upper(one) : py_lower(one));
    start = sep;
  }
  return Value::string(std::move(out));
}

Value f_replace(const Value& v, Args& a) {
  const Value* old = a.get(0, "old");
  const Value* repl = a.get(1, "new");
  if (!old || !repl) throw_render("replace() missing required argument");
  const Value* count = a.get(2, "count");
  int64_t n = count && count->type == Type::Int ? count->i : -1;
  return Value::string(py_replace(v.str(), old->str(), repl->str(), n));
}

Value f_string(const Value& v, Args&) { return v.is_string() ? v : Value::string(v.str()); }
Value f_safe(const Value& v, Args&) { return markup(v.str()); }
Value f_escape(const Value& v, Args&) { return v.is_string() && v.b ? v : markup(html_escape(v.str())); }

Value f_list(const Value& v, Args&) { return Value::make_list(iterate(v)); }

bool parse_py_int(const std::string& text, int64_t base, int64_t* out) {
  std::string s = py_strip(text, nullptr, true, true);
  std::string t;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '_' && k > 0 && k + 1 < s.size() && std::isalnum(static_cast<unsigned char>(s[k - 1])) &&
        std::isalnum(static_cast<unsigned char>(s[k + 1])))
      continue;
    t += s[k];
  }
  if (t.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long r = std::strtoll(t.c_str(), &end, static_cast<int>(base));
  if (errno || *end || std::isspace(static_cast<unsigned char>(t[0]))) return false;
  *out = r;
  return true;
}

bool parse_py_float(const std::string& text, double* out) {
  std::string s = py_strip(text, nullptr, true, true);
  if (s.empty()) return false;
  char* end = nullptr;
  double r = std::strtod(s.c_str(), &end);
  if (*end) return false;
  if (s.find_first_of("xXpP") != std::string::npos) return false;  // hex floats are not Python syntax
  *out = r;
  return true;
}

Value f_int(const Value& v, Args& a) {
  Value dflt = a.get_or(0, "default", Value::integer(0));
  int64_t base = 10;
  if (const Value* b = a.get(1, "base"); b && b->type == Type::Int) base = b->i;
  switch (v.type) {
    case Type::Int: return v;
    case Type::Bool: return Value::integer(v.b);
    case Type::Float:
      if (!std::isfinite(v.f)) throw_render("cannot convert float infinity or NaN to integer");
      return Value::integer(static_cast<int64_t>(v.f));
    case Type::String: {
      int64_t r;
      if (parse_py_int(v.s, base, &r)) return Value::integer(r);
      double d;
      if (parse_py_float(v.s, &d) && std::isfinite(d)) return Value::integer(static_cast<int64_t>(d));
      return dflt;
    }
    default: return dflt;
  }
}

Value f_float(const Value& v, Args& a) {
  Value dflt = a.get_or(0, "default", Value::number(0.0));
  switch (v.type) {
    case Type::Int: return Value::number(static_cast<double>(v.i));
    case Type::Bool: return Value::number(v.b ? 1.0 : 0.0);
    case Type::Float: return v;
    case Type::String: {
      double d;
      return parse_py_float(v.s, &d) ? Value::number(d) : dflt;
    }
    default: return dflt;
  }
}

Value f_first(const Value& v, Args&) {
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(const Value& v, Args&) {
  if (v.type == Type::List && v.list_kind == ListKind::Generator)
    throw_render("'generator' object is not reversible");
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_items(const Value& v, Args&) {
  if (v.is_undefined()) return generator({});
  if (v.type != Type::Dict) throw_render("Can only get item pairs from a mapping.");
  List items;
  for (const auto& kv : v.dict->items) items.push_back(Value::make_list({kv.first, kv.second}, ListKind::Tuple));
  return generator(std::move(items));
}

Value f_dictsort(const Value& v, Args& a) {
  if (v.type != Type::Dict) throw_render("dictsort: expected a mapping, got " + v.type_name());
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  std::string by = a.get_or(1, "by", Value::string("key")).str();
  bool reverse = arg_bool(a, 2, "reverse", false);
  if (by != "key" && by != "value") throw_render("You can only sort by either \"key\" or \"value\"");
  size_t pos = by == "key" ? 0 : 1;
  List items;
  for (const auto& kv : v.dict->items) items.push_back(Value::make_list({kv.first, kv.second}, ListKind::Tuple));
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    Value kx = sort_key((*x.list)[pos], cs), ky = sort_key((*y.list)[pos], cs);
    return reverse ? less(ky, kx) : less(kx, ky);
  });
  return Value::make_list(std::move(items));
}

Value f_sort(const Value& v, Args& a) {
  bool reverse = arg_bool(a, 0, "reverse", false);
  bool cs = arg_bool(a, 1, "case_sensitive", false);
  std::string attr = attribute_arg(a, 2);
  List items = iterate(v);
  auto key = [&](const Value& x) { return sort_key(attr.empty() ? x : attr_path(x, attr), cs); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return Value::make_list(std::move(items));
}

Value f_unique(const Value& v, Args& a) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  std::string attr = attribute_arg(a, 1);
  List out, seen;
  for (const auto& x : iterate(v)) {
    Value k = sort_key(attr.empty() ? x : attr_path(x, attr), cs);
    bool dup = false;
    for (const auto& s : seen) dup = dup || equals(s, k);
    if (dup) continue;
    seen.push_back(k);
    out.push_back(x);
  }
  return generator(std::move(out));
}

Value f_map(const Value& v, Args& a) {
  List out;
  if (!v.truthy()) return generator({});
  std::string attr = attribute_arg(a, static_cast<size_t>(-1));
  if (!attr.empty()) {
    const Value* dflt = a.get(static_cast<size_t>(-1), "default");
    for (const auto& x : iterate(v)) {
      Value r = attr_path(x, attr);
      out.push_back(r.is_undefined() && dflt ? *dflt : r);
    }
    return generator(std::move(out));
  }
  if (a.pos.empty()) throw_render("map requires a filter argument");
  std::string name = a.pos[0].str();
  if (!has_filter(name)) throw_render("No filter named '" + name + "'.");
  Args rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const auto& x : iterate(v)) {
    Args copy = rest;
    out.push_back(apply_filter(name, x, copy));
  }
  return generator(std::move(out));
}

Value select_impl(const Value& v, Args& a, bool by_attr, bool keep) {
  if (!v.truthy()) return generator({});
  size_t first = by_attr ? 1 : 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) throw_render("Missing parameter for attribute name");
    attr = a.pos[0].str();
  }
  std::string test;
  Args rest;
  if (a.pos.size() > first) {
    test = a.pos[first].str();
    if (!has_test(test)) throw_render("No test named '" + test + "'.");
    rest.pos.assign(a.pos.begin() + static_cast<long>(first) + 1, a.pos.end());
  }
  rest.kw = a.kw;
  List out;
  for (const auto& x : iterate(v)) {
    Value probe = by_attr ? attr_path(x, attr) : x;
    bool ok;
    if (test.empty()) {
      ok = probe.truthy();
    } else {
      Args copy = rest;
      ok = apply_test(test, probe, copy);
    }
    if (ok == keep) out.push_back(x);
  }
  return generator(std::move(out));
}

Value f_select(const Value& v, Args& a) { return select_impl(v, a, false, true); }
Value f_reject(const Value& v, Args& a) { return select_impl(v, a, false, false); }
Value f_selectattr(const Value& v, Args& a) { return select_impl(v, a, true, true); }
Value f_rejectattr(const Value& v, Args& a) { return select_impl(v, a, true, false); }

Value f_round(const Value& v, Args& a) {
  int64_t precision = 0;
  if (const Value* p = a.get(0, "precision"); p && p->type == Type::Int) precision = p->i;
  std::string method = a.get_or(1, "method", Value::string("common")).str();
  if (method != "common" && method != "ceil" && method != "floor")
    throw_render("method must be common, ceil or floor");
  if (!v.is_number()) throw_render("type " + v.type_name() + " doesn't define __round__ method");
  if (method == "common" && v.type != Type::Float) return Value::integer(v.type == Type::Int ? v.i : v.b);
  double x = v.as_double();
  if (method == "common") {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), x);
    double r = std::strtod(buf, nullptr);
    if (precision < 0) {
      double m = std::pow(10.0, static_cast<double>(-precision));
      r = std::nearbyint(x / m) * m;
    }
    return Value::number(r);
  }
  double m = std::pow(10.0, static_cast<double>(precision));
  return Value::number((method == "ceil" ? std::ceil(x * m) : std::floor(x * m)) / m);
}

Value f_indent(const Value& v, Args& a) {
  std::string ind = "    ";
  if (const Value* w = a.get(0, "width")) {
    if (w->type == Type::String) ind = w->s;
    else if (w->type == Type::Int) ind.assign(static_cast<size_t>(std::clamp<int64_t>(w->i, 0, 4096)), ' ');
  }
  bool first = arg_bool(a, 1, "first", false);
  bool blank = arg_bool(a, 2, "blank", false);
  Args none;
  Value lines_v = call_value(get_attr(Value::string(v.str() + "\n"), "splitlines"), none);
  const List& lines = *lines_v.list;
  std::string rv;
  if (blank) {
    for (size_t k = 0; k < lines.size(); ++k) rv += (k ? "\n" + ind : "") + lines[k].s;
  } else {
    rv = lines.empty() ? "" : lines[0].s;
    for (size_t k = 1; k < lines.size(); ++k) rv += "\n" + (lines[k].s.empty() ? "" : ind) + lines[k].s;
  }
  if (first) rv = ind + rv;
  return Value::string(std::move(rv));
}

Value f_abs(const Value& v, Args&) {
  if (v.type == Type::Int) return Value::integer(v.i < 0 ? -v.i : v.i);
  if (v.type == Type::Bool) return Value::integer(v.b);
  if (v.type == Type::Float) return Value::number(std::fabs(v.f));
  throw_render("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_reverse(const Value& v, Args&) {
  if (v.type == Type::String) {
    std::u32string u = utf8_decode(v.s);
    std::reverse(u.begin(), u.end());
    return Value::string(utf8_encode(u));
  }
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return generator(std::move(items));
}

Value f_sum(const Value& v, Args& a) {
  std::string attr = attribute_arg(a, 0);
  Value total = a.get_or(1, "start", Value::integer(0));
  for (const auto& x : iterate(v)) {
    total = arith("+", total, attr.empty() ? x : attr_path(x, attr));
  }
  return total;
}

Value minmax(const Value& v, Args& a, bool want_max) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  std::string attr = attribute_arg(a, 1);
  List items = iterate(v);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  size_t best = 0;
  auto key = [&](const Value& x) { return sort_key(attr.empty() ? x : attr_path(x, attr), cs); };
  for (size_t k = 1; k < items.size(); ++k) {
    bool better = want_max ? less(key(items[best]), key(items[k])) : less(key(items[k]), key(items[best]));
    if (better) best = k;
  }
  return items[best];
}
Value f_max(const Value& v, Args& a) { return minmax(v, a, true); }
Value f_min(const Value& v, Args& a) { return minmax(v, a, false); }

Value f_attr(const Value& v, Args& a) {
  const Value* name = a.get(0, "name");
  if (!name) throw_render("attr() missing required argument 'name'");
  if (v.type == Type::Dict) {
    Value m = get_attr(v, name->str());
    if (m.type == Type::Function) return m;
    return Value::undefined("'" + v.object_name() + "' has no attribute '" + name->str() + "'");
  }
  return get_attr(v, name->str());
}

Value f_format(const Value& v, Args& a) {
  return arith("%", Value::string(v.str()), Value::make_list(a.pos, ListKind::Tuple));
}

Value f_wordcount(const Value& v, Args& a) {
  (void)a;
  Args none;
  return Value::integer(
      static_cast<int64_t>(call_value(get_attr(Value::string(v.str()), "split"), none).list->size()));
}

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = {
      {"abs", f_abs},         {"attr", f_attr},       {"capitalize", f_capitalize}, {"count", f_length},
      {"d", f_default},       {"default", f_default}, {"dictsort", f_dictsort},     {"e", f_escape},
      {"escape", f_escape},   {"first", f_first},     {"float", f_float},           {"format", f_format},
      {"indent", f_indent},   {"int", f_int},         {"items", f_items},           {"join", f_join},
      {"last", f_last},       {"length", f_length},   {"list", f_list},             {"lower", f_lower},
      {"map", f_map},         {"max", f_max},         {"min", f_min},               {"reject", f_reject},
      {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse}, {"round", f_round},
      {"safe", f_safe},       {"select", f_select},   {"selectattr", f_selectattr}, {"sort", f_sort},
      {"string", f_string},   {"sum", f_sum},         {"title", f_title},           {"tojson", f_tojson},
      {"trim", f_trim},       {"unique", f_unique},   {"upper", f_upper},           {"wordcount", f_wordcount},
  };
  return table;
}

// ---- tests ----

const Value& test_arg(const Args& a, const char* test) {
  const Value* v = a.get(0, nullptr);
  if (!v) throw_render(std::string(test) + "() missing required argument");
  return *v;
}

bool t_defined(const Value& v, Args&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, Args&) { return v.is_undefined(); }
bool t_none(const Value& v, Args&) { return v.is_none(); }
bool t_boolean(const Value& v, Args&) { return v.type == Type::Bool; }
bool t_false(const Value& v, Args&) { return v.type == Type::Bool && !v.b; }
bool t_true(const Value& v, Args&) { return v.type == Type::Bool && v.b; }
bool t_integer(const Value& v, Args&) { return v.type == Type::Int; }
bool t_float(const Value& v, Args&) { return v.type == Type::Float; }
bool t_number(const Value& v, Args&) { return v.is_number(); }
bool t_string(const Value& v, Args&) { return v.type == Type::String; }
bool t_mapping(const Value& v, Args&) { return v.type == Type::Dict; }
bool t_iterable(const Value& v, Args&) {
  return v.type == Type::Undefined || v.type == Type::String || v.type == Type::List || v.type == Type::Dict;
}
bool t_sequence(const Value& v, Args&) {
  return v.type == Type::Undefined || v.type == Type::String || v.type == Type::Dict ||
         (v.type == Type::List && v.list_kind != ListKind::Generator && v.list_kind != ListKind::DictItems);
}
bool t_callable(const Value& v, Args&) { return v.type == Type::Function; }
bool t_escaped(const Value& v, Args&) { return v.type == Type::String && v.b; }
bool t_sameas(const Value& v, Args& a) {
  const Value& o = test_arg(a, "sameas");
  if (v.type != o.type) return false;
  switch (v.type) {
    case Type::List: return v.list == o.list;
    case Type::Dict:
    case Type::Namespace: return v.dict == o.dict;
    case Type::Function: return v.fn == o.fn;
    default: return equals(v, o);
  }
}
bool t_in(const Value& v, Args& a) {
  return contains(test_arg(a, "in"), v);
}
bool t_eq(const Value& v, Args& a) { return equals(v, test_arg(a, "eq")); }
bool t_ne(const Value& v, Args& a) { return !equals(v, test_arg(a, "ne")); }
bool t_lt(const Value& v, Args& a) { return less(v, test_arg(a, "lt")); }
bool t_gt(const Value& v, Args& a) { return less(test_arg(a, "gt"), v); }
bool t_le(const Value& v, Args& a) { return !less(test_arg(a, "le"), v); }
bool t_ge(const Value& v, Args& a) { return !less(v, test_arg(a, "ge")); }
int64_t int_of(const Value& v, const char* test) {
  if (v.type == Type::Int) return v.i;
  if (v.type == Type::Bool) return v.b;
  throw_render(std::string(test) + ": expected an integer, got " + v.type_name());
}
bool t_odd(const Value& v, Args&) { return int_of(v, "odd") % 2 != 0; }
bool t_even(const Value& v, Args&) { return int_of(v, "even") % 2 == 0; }
bool t_divisibleby(const Value& v, Args& a) {
  int64_t d = int_of(test_arg(a, "divisibleby"), "divisibleby");
  if (d == 0) throw_render("integer division or modulo by zero");
  return int_of(v, "divisibleby") % d == 0;
}
bool t_lower(const Value& v, Args&) {
  std::string s = v.str();
  return py_lower(s) == s && py_upper(s) != s;
}
bool t_upper(const Value& v, Args&) {
  std::string s = v.str();
  return py_upper(s) == s && py_lower(s) != s;
}
bool t_filter(const Value& v, Args&) { return v.type == Type::String && has_filter(v.s); }
bool t_test(const Value& v, Args&) { return v.type == Type::String && has_test(v.s); }

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> table = {
      {"defined", t_defined},   {"undefined", t_undefined}, {"none", t_none},       {"boolean", t_boolean},
      {"false", t_false},       {"true", t_true},           {"integer", t_integer}, {"float", t_float},
      {"number", t_number},     {"string", t_string},       {"mapping", t_mapping}, {"iterable", t_iterable},
      {"sequence", t_sequence}, {"callable", t_callable},   {"escaped", t_escaped}, {"sameas", t_sameas},
      {"in", t_in},             {"eq", t_eq},               {"equalto", t_eq},      {"==", t_eq},
      {"ne", t_ne},             {"!=", t_ne},               {"lt", t_lt},           {"lessthan", t_lt},
      {"<", t_lt},              {"gt", t_gt},               {"greaterthan", t_gt},  {">", t_gt},
      {"le", t_le},             {"<=", t_le},               {"ge", t_ge},           {">=", t_ge},
      {"odd", t_odd},           {"even", t_even},           {"divisibleby", t_divisibleby},
      {"lower", t_lower},       {"upper", t_upper},         {"filter", t_filter},   {"test", t_test},
  };
  return table;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) != 0; }
bool has_test(const std::string& name) { return tests().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& operand, Args& args) {
  auto it = filters().find(name);
  if (it == filters().end()) throw_render("No filter named '" + name + "' found.");
  return it->second(operand, args);
}

bool apply_test(const std::string& name, const Value& v, Args& args) {
  auto it = tests().find(name);
  if (it == tests().end()) throw_render("No test named '" + name + "' found.");
  return it->second(v, args);
}

}  // namespace ignis::text::jinja
