// Jinja evaluator (see eval.h).
#include "text/jinja/eval.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "text/jinja/builtins.h"

namespace ignis::text::jinja {

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get())
    for (const auto& kv : s->vars)
      if (kv.first == name) return &kv.second;
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  for (auto& kv : vars)
    if (kv.first == name) {
      kv.second = std::move(v);
      return;
    }
  vars.emplace_back(name, std::move(v));
}

void assign_targets(Scope& scope, const std::vector<std::string>& names, const Value& v) {
  if (names.size() == 1) {
    scope.set(names[0], v);
    return;
  }
  List items = iterate(v);
  if (items.size() != names.size())
    throw_render(items.size() < names.size()
                     ? "not enough values to unpack (expected " + std::to_string(names.size()) + ", got " +
                           std::to_string(items.size()) + ")"
                     : "too many values to unpack (expected " + std::to_string(names.size()) + ")");
  for (size_t k = 0; k < names.size(); ++k) scope.set(names[k], items[k]);
}

static ScopePtr child(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

std::string Evaluator::render(const Body& body, ScopePtr globals) {
  Evaluator ev;
  std::string out;
  ev.exec_body(body, child(globals), out);
  return out;
}

Evaluator::Flow Evaluator::exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& s : body) {
    Flow f = exec(*s, scope, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

std::string Evaluator::capture(const Body& body, const ScopePtr& scope) {
  std::string out;
  exec_body(body, scope, out);
  return out;
}

Value Evaluator::apply_filters(const std::vector<ExprPtr>& filters, Value v, const ScopePtr& scope) {
  for (const auto& f : filters) {
    Args args = eval_args(*f, scope, 1);
    try {
      v = apply_filter(f->name, v, args);
    } catch (RenderError& err) {
      if (!err.line) err.line = f->line;
      throw;
    }
  }
  return v;
}

Evaluator::Flow Evaluator::exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
  try {
    switch (s.kind) {
      case StmtKind::Text: out += s.text; return Flow::Normal;
      case StmtKind::Output: out += eval(*s.expr, scope).str(); return Flow::Normal;
      case StmtKind::If:
        for (size_t k = 0; k < s.conds.size(); ++k)
          if (eval(*s.conds[k], scope).truthy()) return exec_body(s.bodies[k], scope, out);
        return exec_body(s.else_body, scope, out);
      case StmtKind::For: return exec_for(s, scope, out);
      case StmtKind::Set: exec_set(s, scope); return Flow::Normal;
      case StmtKind::SetBlock: {
        Value v = Value::string(capture(s.body, scope));
        scope->set(s.targets[0], apply_filters(s.filters, std::move(v), scope));
        return Flow::Normal;
      }
      case StmtKind::Macro: scope->set(s.text, make_macro(s, scope, s.text)); return Flow::Normal;
      case StmtKind::CallBlock: {
        Value caller = make_macro(s, scope, "caller");
        const Expr& call = *s.expr;
        Value fn = eval(*call.kids[0], scope);
        Args args = eval_args(call, scope, 1);
        args.kw.emplace_back("caller", caller);
        out += call_value(fn, args).str();
        return Flow::Normal;
      }
      case StmtKind::FilterBlock:
        out += apply_filters(s.filters, Value::string(capture(s.body, scope)), scope).str();
        return Flow::Normal;
      case StmtKind::Break: return Flow::Break;
      case StmtKind::Continue: return Flow::Continue;
      case StmtKind::Scope: return exec_body(s.body, scope, out);
      case StmtKind::With: {
        ScopePtr inner = child(scope);
        for (size_t k = 0; k < s.targets.size(); ++k) inner->set(s.targets[k], eval(*s.conds[k], scope));
        return exec_body(s.body, inner, out);
      }
    }
  } catch (RenderError& err) {
    if (!err.line) err.line = s.line;
    throw;
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  Value seq = eval(*s.expr, scope);
  List items = iterate(seq);
  if (s.cond) {
    List kept;
    for (auto& it : items) {
      ScopePtr probe = child(scope);
      assign_targets(*probe, s.targets, it);
      if (eval(*s.cond, probe).truthy()) kept.push_back(std::move(it));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(s.else_body, scope, out);
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t k = 0; k < n; ++k) {
    ScopePtr inner = child(scope);
    Value loop = Value::make_dict();
    Dict& d = *loop.dict;
    d.set(Value::string("index"), Value::integer(k + 1));
    d.set(Value::string("index0"), Value::integer(k));
    d.set(Value::string("revindex"), Value::integer(n - k));
    d.set(Value::string("revindex0"), Value::integer(n - k - 1));
    d.set(Value::string("first"), Value::boolean(k == 0));
    d.set(Value::string("last"), Value::boolean(k == n - 1));
    d.set(Value::string("length"), Value::integer(n));
    d.set(Value::string("depth"), Value::integer(1));
    d.set(Value::string("depth0"), Value::integer(0));
    d.set(Value::string("previtem"),
          k > 0 ? items[k - 1] : Value::undefined("there is no previous item"));
    d.set(Value::string("nextitem"), k + 1 < n ? items[k + 1] : Value::undefined("there is no next item"));
    d.set(Value::string("cycle"), Value::function("cycle", [k](Args& a) -> Value {
            if (a.pos.empty()) throw_render("no items for cycling given");
            return a.pos[static_cast<size_t>(k) % a.pos.size()];
          }));
    inner->set("loop", loop);
    assign_targets(*inner, s.targets, items[k]);
    Flow f = exec_body(s.body, inner, out);
    if (f == Flow::Break) break;
  }
  return Flow::Normal;
}

void Evaluator::exec_set(const Stmt& s, const ScopePtr& scope) {
  Value v = eval(*s.expr, scope);
  if (s.target_expr) {
    const Expr& t = *s.target_expr;
    const Value* ns = scope->find(t.kids[0]->name);
    if (!ns || ns->type != Type::Namespace)
      throw_render("cannot assign attribute on non-namespace object");
    ns->dict->set(Value::string(t.name), std::move(v));
    return;
  }
  assign_targets(*scope, s.targets, v);
}

Value Evaluator::make_macro(const Stmt& s, const ScopePtr& scope, const std::string& name) {
  const Stmt* def = &s;
  closures_.push_back(scope);
  const size_t closure = closures_.size() - 1;
  Evaluator* self = this;
  return Value::function(name, [def, closure, self, name](Args& a) -> Value {
    if (self->call_depth_ >= kMaxCallDepth) throw_render("maximum recursion depth exceeded in macro '" + name + "'");
    struct Depth {
      int& d;
      ~Depth() { --d; }
    } depth{++self->call_depth_};
    ScopePtr inner = std::make_shared<Scope>();
    inner->parent = self->closures_[closure];
    List varargs;
    for (size_t k = 0; k < a.pos.size(); ++k) {
      if (k < def->params.size()) inner->set(def->params[k], a.pos[k]);
      else varargs.push_back(a.pos[k]);
    }
    Value kwargs = Value::make_dict();
    for (auto& kv : a.kw) {
      bool is_param = false;
      for (const auto& p : def->params) is_param = is_param || p == kv.first;
      if (is_param || kv.first == "caller") inner->set(kv.first, kv.second);
      else kwargs.dict->set(Value::string(kv.first), kv.second);
    }
    for (size_t k = 0; k < def->params.size(); ++k) {
      bool given = false;
      for (const auto& kv : inner->vars) given = given || kv.first == def->params[k];
      if (given) continue;
      inner->set(def->params[k], def->defaults[k] ? self->eval(*def->defaults[k], inner)
                                                  : Value::undefined("parameter '" + def->params[k] +
                                                                     "' was not provided"));
    }
    inner->set("varargs", Value::make_list(std::move(varargs), ListKind::Tuple));
    inner->set("kwargs", kwargs);
    return Value::string(self->capture(def->body, inner));
  });
}

Args Evaluator::eval_args(const Expr& e, const ScopePtr& scope, size_t first_arg) {
  Args a;
  for (size_t k = first_arg; k < e.kids.size(); ++k) a.pos.push_back(eval(*e.kids[k], scope));
  for (const auto& kv : e.kwargs) a.kw.emplace_back(kv.first, eval(*kv.second, scope));
  return a;
}

Value Evaluator::eval(const Expr& e, const ScopePtr& scope) {
  try {
    return eval_inner(e, scope);
  } catch (RenderError& err) {
    if (!err.line) err.line = e.line;
    throw;
  }
}

static Value require_defined(Value v) {
  if (v.is_undefined()) v.fail_undefined();
  return v;
}

Value Evaluator::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::Literal: return e.literal;
    case ExprKind::Name: {
      const Value* v = scope->find(e.name);
      return v ? *v : Value::undefined("'" + e.name + "' is undefined");
    }
    case ExprKind::ListLit:
    case ExprKind::TupleLit: {
      List items;
      for (const auto& k : e.kids) items.push_back(eval(*k, scope));
      return Value::make_list(std::move(items), e.kind == ExprKind::TupleLit ? ListKind::Tuple : ListKind::List);
    }
    case ExprKind::DictLit: {
      Value d = Value::make_dict();
      for (size_t k = 0; k + 1 < e.kids.size(); k += 2)
        d.dict->set(eval(*e.kids[k], scope), eval(*e.kids[k + 1], scope));
      return d;
    }
    case ExprKind::Attr: return get_attr(require_defined(eval(*e.kids[0], scope)), e.name);
    case ExprKind::Item: {
      Value obj = require_defined(eval(*e.kids[0], scope));
      return get_item(obj, eval(*e.kids[1], scope));
    }
    case ExprKind::Slice: {
      Value obj = require_defined(eval(*e.kids[0], scope));
      Value b[3];
      const Value* p[3] = {nullptr, nullptr, nullptr};
      for (int k = 0; k < 3; ++k)
        if (e.kids[1 + k]) {
          b[k] = eval(*e.kids[1 + k], scope);
          if (!b[k].is_none()) p[k] = &b[k];
        }
      return slice(obj, p[0], p[1], p[2]);
    }
    case ExprKind::Call: {
      Value fn = require_defined(eval(*e.kids[0], scope));
      Args a = eval_args(e, scope, 1);
      return call_value(fn, a);
    }
    case ExprKind::Filter: {
      Value v = eval(*e.kids[0], scope);
      Args a = eval_args(e, scope, 1);
      return apply_filter(e.name, v, a);
    }
    case ExprKind::Test: {
      Value v = eval(*e.kids[0], scope);
      Args a = eval_args(e, scope, 1);
      return Value::boolean(apply_test(e.name, v, a) != e.negated);
    }
    case ExprKind::Unary: {
      Value v = eval(*e.kids[0], scope);
      if (e.name == "not") return Value::boolean(!v.truthy());
      if (v.type == Type::Int || v.type == Type::Bool) {
        int64_t x = v.type == Type::Int ? v.i : v.b;
        if (e.name == "-" && x == INT64_MIN) throw_render("integer overflow in unary - (beyond 64 bits)");
        return Value::integer(e.name == "-" ? -x : x);
      }
      if (v.type == Type::Float) return Value::number(e.name == "-" ? -v.f : v.f);
      if (v.is_undefined()) v.fail_undefined();
      throw_render("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
    }
    case ExprKind::Binary: return eval_binary(e, scope);
    case ExprKind::Compare: return eval_compare(e, scope);
    case ExprKind::Cond: {
      if (eval(*e.kids[1], scope).truthy()) return eval(*e.kids[0], scope);
      if (e.kids[2]) return eval(*e.kids[2], scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value::undefined();
}

Value Evaluator::eval_binary(const Expr& e, const ScopePtr& scope) {
  Value a = eval(*e.kids[0], scope);
  if (e.name == "and") return a.truthy() ? eval(*e.kids[1], scope) : a;
  if (e.name == "or") return a.truthy() ? a : eval(*e.kids[1], scope);
  Value b = eval(*e.kids[1], scope);
  if (e.name == "~") return Value::string(a.str() + b.str());
  return arith(e.name, a, b);
}

Value Evaluator::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.kids[0], scope);
  for (size_t k = 0; k < e.ops.size(); ++k) {
    Value right = eval(*e.kids[k + 1], scope);
    const std::string& op = e.ops[k];
    bool r;
    if (op == "==") r = equals(left, right);
    else if (op == "!=") r = !equals(left, right);
    else if (op == "<") r = less(left, right);
    else if (op == ">") r = less(right, left);
    else if (op == "<=") r = equals(left, right) || less(left, right);
    else if (op == ">=") r = equals(left, right) || less(right, left);
    else if (op == "in") r = contains(right, left);
    else r = !contains(right, left);
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

bool contains(const Value& container, const Value& item) {
  switch (container.type) {
    case Type::Undefined: return false;
    case Type::String:
      if (item.type != Type::String)
        throw_render("'in <string>' requires string as left operand, not " + item.type_name());
      return container.s.find(item.s) != std::string::npos;
    case Type::List:
      for (const auto& v : *container.list)
        if (equals(v, item)) return true;
      return false;
    case Type::Dict: return container.dict->find(item) != nullptr;
    default: throw_render("argument of type '" + container.type_name() + "' is not iterable");
  }
}

static int64_t as_int(const Value& v) { return v.type == Type::Int ? v.i : static_cast<int64_t>(v.b); }
static bool is_intlike(const Value& v) { return v.type == Type::Int || v.type == Type::Bool; }

static Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.type == Type::String) {
    if (seq.s.size() * static_cast<size_t>(n) > (64u << 20)) throw_render("string repetition too large");
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += seq.s;
    return Value::string(std::move(out));
  }
  if (seq.list->size() * static_cast<size_t>(n) > (16u << 20)) throw_render("list repetition too large");
  List out;
  for (int64_t k = 0; k < n; ++k) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return Value::make_list(std::move(out), seq.list_kind);
}

// Python's printf-style `str % args`: flags, width, precision and the s r d i f e g x o c conversions.
static Value percent_format(const Value& fmt, const Value& arg) {
  List args = arg.type == Type::List && arg.list_kind == ListKind::Tuple ? *arg.list : List{arg};
  std::string out;
  size_t ai = 0;
  const std::string& f = fmt.s;
  for (size_t k = 0; k < f.size(); ++k) {
    if (f[k] != '%') {
      out += f[k];
      continue;
    }
    size_t spec_start = k + 1;
    size_t j = spec_start;
    while (j < f.size() && std::strchr("-+ 0#", f[j])) ++j;
    while (j < f.size() && std::isdigit(static_cast<unsigned char>(f[j]))) ++j;
    if (j < f.size() && f[j] == '.') {
      ++j;
      while (j < f.size() && std::isdigit(static_cast<unsigned char>(f[j]))) ++j;
    }
    if (j >= f.size()) throw_render("incomplete format");
    const char conv = f[j];
    const std::string spec = f.substr(spec_start, j - spec_start);
    k = j;
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (spec.size() > 16) throw_render("format specification too long");
    if (ai >= args.size()) throw_render("not enough arguments for format string");
    const Value& v = args[ai++];
    char buf[512];
    std::string cfmt = "%" + spec;
    if (conv == 's' || conv == 'r') {
      std::string text = conv == 's' ? v.str() : v.repr();
      std::snprintf(buf, sizeof(buf), (cfmt + "s").c_str(), text.c_str());
      out += text.size() < 256 ? std::string(buf) : text;
    } else if (std::strchr("dioxXc", conv)) {
      if (!v.is_number()) throw_render(std::string("%") + conv + " format: a real number is required, not " + v.type_name());
      long long x = v.type == Type::Float ? static_cast<long long>(v.f) : (v.type == Type::Int ? v.i : v.b);
      if (conv == 'c') {
        std::string one;
        utf8_append(one, static_cast<char32_t>(x));
        out += one;
      } else {
        std::snprintf(buf, sizeof(buf), (cfmt + "ll" + (conv == 'i' ? 'd' : conv)).c_str(), x);
        out += buf;
      }
    } else if (std::strchr("feEFgG", conv)) {
      if (!v.is_number()) throw_render(std::string("must be real number, not ") + v.type_name());
      std::snprintf(buf, sizeof(buf), (cfmt + conv).c_str(), v.as_double());
      out += buf;
    } else {
      throw_render(std::string("unsupported format character '") + conv + "'");
    }
  }
  if (ai < args.size()) throw_render("not all arguments converted during string formatting");
  return Value::string(std::move(out));
}

Value arith(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) a.fail_undefined();
  if (b.is_undefined()) b.fail_undefined();
  if (a.is_number() && b.is_number()) {
    bool ints = is_intlike(a) && is_intlike(b);
    if (ints && (op == "+" || op == "-" || op == "*")) {
      int64_t r;
      bool overflow = op == "+"   ? __builtin_add_overflow(as_int(a), as_int(b), &r)
                      : op == "-" ? __builtin_sub_overflow(as_int(a), as_int(b), &r)
                                  : __builtin_mul_overflow(as_int(a), as_int(b), &r);
      if (overflow) throw_render("integer overflow in " + op + " (beyond 64 bits)");
      return Value::integer(r);
    }
    if (op == "+") return Value::number(a.as_double() + b.as_double());
    if (op == "-") return Value::number(a.as_double() - b.as_double());
    if (op == "*") return Value::number(a.as_double() * b.as_double());
    if (op == "/") {
      if (b.as_double() == 0) throw_render("division by zero");
      return Value::number(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") {
      if (b.as_double() == 0) throw_render(ints ? "integer division or modulo by zero" : "float modulo");
      if (ints) {
        int64_t x = as_int(a), y = as_int(b);
        if (x == INT64_MIN && y == -1) throw_render("integer overflow in " + op + " (beyond 64 bits)");
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
          q -= 1;
          r += y;
        }
        return Value::integer(op == "//" ? q : r);
      }
      double x = a.as_double(), y = b.as_double();
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return op == "//" ? Value::number(std::floor(x / y)) : Value::number(r);
    }
    if (op == "**") {
      if (ints && as_int(b) >= 0) {
        // Exponentiation by squaring; the square is only needed while exponent bits remain.
        int64_t r = 1, base = as_int(a), exp = as_int(b);
        while (exp > 0) {
          if ((exp & 1) && __builtin_mul_overflow(r, base, &r))
            throw_render("integer overflow in ** (beyond 64 bits)");
          exp >>= 1;
          if (exp > 0 && __builtin_mul_overflow(base, base, &base))
            throw_render("integer overflow in ** (beyond 64 bits)");
        }
        return Value::integer(r);
      }
      return Value::number(std::pow(a.as_double(), b.as_double()));
    }
  }
  if (op == "+") {
    if (a.type == Type::String && b.type == Type::String) {
      if (!a.b && !b.b) return Value::string(a.s + b.s);
      // Markup (from |safe) escapes the plain operand, as markupsafe does.
      Value m = Value::string((a.b ? a.s : html_escape(a.s)) + (b.b ? b.s : html_escape(b.s)));
      m.b = true;
      return m;
    }
    if (a.type == Type::List && b.type == Type::List && a.list_kind == b.list_kind &&
        a.list_kind != ListKind::Generator) {
      List out = *a.list;
      out.insert(out.end(), b.list->begin(), b.list->end());
      return Value::make_list(std::move(out), a.list_kind);
    }
    if (a.type == Type::String || (a.type == Type::List && a.list_kind == ListKind::List))
      throw_render("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
  }
  if (op == "*") {
    if ((a.type == Type::String || a.type == Type::List) && is_intlike(b)) return repeat(a, as_int(b));
    if ((b.type == Type::String || b.type == Type::List) && is_intlike(a)) return repeat(b, as_int(a));
  }
  if (op == "%" && a.type == Type::String) return percent_format(a, b);
  throw_render("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace ignis::text::jinja
