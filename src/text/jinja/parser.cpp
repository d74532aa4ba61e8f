// Jinja parser (see parser.h). Precedence, lowest first, as in jinja2.parser:
// ternary, or, and, not, comparisons (chained, in / not in), + -, ~, * / // %, **, unary - +,
// then postfix (.attr, [item], [a:b:c], call) and filters / tests.
#include "text/jinja/parser.h"

#include <initializer_list>

#include "text/jinja/builtins.h"

namespace ignis::text::jinja {

namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Body parse_all() {
    std::string end;
    Body b = parse_body({}, &end);
    if (cur().type != Tok::Eof) fail("unexpected end tag");
    for (const auto& s : b) check_names(*s, false);
    return b;
  }

  // NOTE: jinja2's compiler rejects unknown filters and tests, except inside `if` statements and
  // conditional expressions (its "soft" frames), where they fail only when evaluated. Loops, macros and
  // blocks open fresh frames, which are not soft again.
  static void check_names(const Expr& e, bool soft) {
    if (!soft && e.kind == ExprKind::Filter && !has_filter(e.name))
      throw RenderError{"No filter named '" + e.name + "'.", e.line};
    if (!soft && e.kind == ExprKind::Test && !has_test(e.name))
      throw RenderError{"No test named '" + e.name + "'.", e.line};
    bool inner = soft || e.kind == ExprKind::Cond;
    for (const auto& k : e.kids)
      if (k) check_names(*k, inner);
    for (const auto& kv : e.kwargs) check_names(*kv.second, inner);
  }
  static void check_names(const Body& b, bool soft) {
    for (const auto& s : b) check_names(*s, soft);
  }
  static void check_names(const Stmt& s, bool soft) {
    bool cond_soft = soft || s.kind == StmtKind::If;
    if (s.expr) check_names(*s.expr, soft);
    if (s.cond) check_names(*s.cond, false);
    for (const auto& c : s.conds)
      if (c) check_names(*c, cond_soft);
    for (const auto& d : s.defaults)
      if (d) check_names(*d, false);
    for (const auto& f : s.filters) check_names(*f, false);
    for (const auto& b : s.bodies) check_names(b, cond_soft);
    check_names(s.body, false);
    check_names(s.else_body, s.kind == StmtKind::If ? cond_soft : false);
  }

 private:
  const std::vector<Token>& t_;
  size_t p_ = 0;
  int depth_ = 0;

  // Bounds recursion on hostile input (deeply nested brackets or blocks).
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.fail("template nested too deeply (more than 200 levels)");
    }
    ~DepthGuard() { --p.depth_; }
  };
  static constexpr int kMaxDepth = 200;

  const Token& cur() const { return t_[p_]; }
  const Token& peek(size_t n = 1) const { return t_[std::min(p_ + n, t_.size() - 1)]; }
  const Token& next() { return t_[p_ < t_.size() - 1 ? p_++ : p_]; }
  [[noreturn]] void fail(const std::string& msg) const { throw RenderError{msg, cur().line}; }

  bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::Eof: return "end of template";
      case Tok::BlockEnd: return "end of statement block";
      case Tok::VarEnd: return "end of print statement";
      case Tok::String: return "string";
      case Tok::Int:
      case Tok::Float: return "number";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(std::string("expected token '") + op + "', got " + describe(cur()));
  }
  void expect_name(const char* n) {
    if (!accept_name(n)) fail(std::string("expected token '") + n + "', got " + describe(cur()));
  }
  std::string expect_identifier() {
    if (cur().type != Tok::Name) fail("expected name, got " + describe(cur()));
    return next().text;
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd) fail("expected end of statement block, got " + describe(cur()));
    next();
  }

  ExprPtr node(ExprKind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  // ---- statements ----

  // Parses until a block tag named in `ends`; leaves the position on that tag's name.
  Body parse_body(std::initializer_list<const char*> ends, std::string* end_tag) {
    Body body;
    while (true) {
      const Token& tk = cur();
      if (tk.type == Tok::Eof) {
        if (ends.size() != 0) fail(std::string("unexpected end of template, expected '") + *ends.begin() + "'");
        return body;
      }
      if (tk.type == Tok::Text) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Text;
        s->line = tk.line;
        s->text = tk.text;
        body.push_back(std::move(s));
        next();
      } else if (tk.type == Tok::VarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Output;
        s->line = tk.line;
        s->expr = parse_tuple();
        if (cur().type != Tok::VarEnd) fail("expected end of print statement, got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (tk.type == Tok::BlockBegin) {
        const Token& name = peek();
        if (name.type != Tok::Name) {
          next();
          fail("tag name expected");
        }
        for (const char* e : ends)
          if (name.text == e) {
            next();
            *end_tag = name.text;
            next();
            return body;
          }
        next();
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(tk));
      }
    }
  }

  StmtPtr make_stmt(StmtKind k, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = k;
    s->line = line;
    return s;
  }

  StmtPtr parse_statement() {
    DepthGuard guard(*this);
    const Token& tag = next();
    int line = tag.line;
    const std::string& n = tag.text;
    if (n == "if") return parse_if(line);
    if (n == "for") return parse_for(line);
    if (n == "set") return parse_set(line);
    if (n == "macro") return parse_macro(line);
    if (n == "call") return parse_call_block(line);
    if (n == "filter") {
      auto s = make_stmt(StmtKind::FilterBlock, line);
      parse_filter_chain(s->filters);
      expect_block_end();
      std::string end;
      s->body = parse_body({"endfilter"}, &end);
      expect_block_end();
      return s;
    }
    if (n == "break" || n == "continue") {
      expect_block_end();
      return make_stmt(n == "break" ? StmtKind::Break : StmtKind::Continue, line);
    }
    if (n == "generation") {
      auto s = make_stmt(StmtKind::Scope, line);
      expect_block_end();
      std::string end;
      s->body = parse_body({"endgeneration"}, &end);
      expect_block_end();
      return s;
    }
    if (n == "with") {
      auto s = make_stmt(StmtKind::With, line);
      while (cur().type != Tok::BlockEnd) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(expect_identifier());
        expect_op("=");
        s->conds.push_back(parse_expression(true));
      }
      expect_block_end();
      std::string end;
      s->body = parse_body({"endwith"}, &end);
      expect_block_end();
      return s;
    }
    p_--;
    fail("Encountered unknown tag '" + n + "'.");
  }

  StmtPtr parse_if(int line) {
    auto s = make_stmt(StmtKind::If, line);
    while (true) {
      s->conds.push_back(parse_tuple());
      expect_block_end();
      std::string end;
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
      if (end == "elif") continue;
      if (end == "else") {
        expect_block_end();
        s->else_body = parse_body({"endif"}, &end);
      }
      expect_block_end();
      return s;
    }
  }

  void parse_targets(std::vector<std::string>& out) {
    bool paren = accept_op("(");
    do {
      out.push_back(expect_identifier());
    } while (accept_op(","));
    if (paren) expect_op(")");
  }

  StmtPtr parse_for(int line) {
    auto s = make_stmt(StmtKind::For, line);
    parse_targets(s->targets);
    expect_name("in");
    s->expr = parse_tuple(/*with_condexpr=*/false);
    if (accept_name("if")) s->cond = parse_expression(true);
    if (accept_name("recursive")) fail("recursive for loops are not supported");
    expect_block_end();
    std::string end;
    s->body = parse_body({"endfor", "else"}, &end);
    if (end == "else") {
      expect_block_end();
      s->else_body = parse_body({"endfor"}, &end);
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(int line) {
    if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == ".") {
      auto s = make_stmt(StmtKind::Set, line);
      auto target = node(ExprKind::Attr, cur().line);
      auto base = node(ExprKind::Name, cur().line);
      base->name = next().text;
      next();
      target->name = expect_identifier();
      target->kids.push_back(std::move(base));
      s->target_expr = std::move(target);
      expect_op("=");
      s->expr = parse_tuple();
      expect_block_end();
      return s;
    }
    std::vector<std::string> targets;
    parse_targets(targets);
    if (accept_op("=")) {
      auto s = make_stmt(StmtKind::Set, line);
      s->targets = std::move(targets);
      s->expr = parse_tuple();
      expect_block_end();
      return s;
    }
    auto s = make_stmt(StmtKind::SetBlock, line);
    if (targets.size() != 1) fail("expected token '=', got " + describe(cur()));
    s->targets = std::move(targets);
    if (accept_op("|")) parse_filter_chain(s->filters);
    expect_block_end();
    std::string end;
    s->body = parse_body({"endset"}, &end);
    expect_block_end();
    return s;
  }

  void parse_params(Stmt& s) {
    expect_op("(");
    while (!accept_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (accept_op(")")) break;
      s.params.push_back(expect_identifier());
      s.defaults.push_back(accept_op("=") ? parse_expression(true) : nullptr);
    }
  }

  StmtPtr parse_macro(int line) {
    auto s = make_stmt(StmtKind::Macro, line);
    s->text = expect_identifier();
    parse_params(*s);
    expect_block_end();
    std::string end;
    s->body = parse_body({"endmacro"}, &end);
    if (cur().type == Tok::Name) next();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(int line) {
    auto s = make_stmt(StmtKind::CallBlock, line);
    if (is_op("(")) parse_params(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::Call) fail("expected call");
    expect_block_end();
    std::string end;
    s->body = parse_body({"endcall"}, &end);
    expect_block_end();
    return s;
  }

  void parse_filter_chain(std::vector<ExprPtr>& out) {
    do {
      out.push_back(parse_filter(nullptr));
    } while (accept_op("|"));
  }

  // ---- expressions ----

  ExprPtr parse_tuple(bool with_condexpr = true) {
    int line = cur().line;
    ExprPtr first = with_condexpr ? parse_expression(true) : parse_or();
    if (!is_op(",")) return first;
    auto tup = node(ExprKind::TupleLit, line);
    tup->kids.push_back(std::move(first));
    while (accept_op(",")) {
      if (cur().type == Tok::BlockEnd || cur().type == Tok::VarEnd || is_op(")") || is_name("if")) break;
      tup->kids.push_back(with_condexpr ? parse_expression(true) : parse_or());
    }
    return tup;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    ExprPtr e = parse_or();
    if (!with_condexpr) return e;
    while (is_name("if")) {
      int line = next().line;
      auto c = node(ExprKind::Cond, line);
      c->kids.push_back(std::move(e));
      c->kids.push_back(parse_or());
      c->kids.push_back(accept_name("else") ? parse_expression(true) : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, int line) {
    auto e = node(ExprKind::Binary, line);
    e->name = op;
    e->kids.push_back(std::move(a));
    e->kids.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      int line = next().line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      int line = next().line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }
  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      int line = next().line;
      auto e = node(ExprKind::Unary, line);
      e->name = "not";
      e->kids.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr e = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(ExprKind::Compare, line);
        cmp->kids.push_back(std::move(e));
      }
      cmp->ops.push_back(op);
      cmp->kids.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(e);
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = next();
      e = binary(op.text, std::move(e), parse_concat(), op.line);
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      int line = next().line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = next();
      e = binary(op.text, std::move(e), parse_pow(), op.line);
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      int line = next().line;
      e = binary("**", std::move(e), parse_unary(true), line);
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& op = next();
      e = node(ExprKind::Unary, op.line);
      e->name = op.text;
      e->kids.push_back(parse_unary(false));
    } else {
      e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& tk = cur();
    int line = tk.line;
    if (tk.type == Tok::Name) {
      next();
      auto e = node(ExprKind::Literal, line);
      if (tk.text == "true" || tk.text == "True") e->literal = Value::boolean(true);
      else if (tk.text == "false" || tk.text == "False") e->literal = Value::boolean(false);
      else if (tk.text == "none" || tk.text == "None") e->literal = Value::none();
      else {
        e->kind = ExprKind::Name;
        e->name = tk.text;
      }
      return e;
    }
    if (tk.type == Tok::String) {
      std::string s;
      while (cur().type == Tok::String) s += next().text;
      auto e = node(ExprKind::Literal, line);
      e->literal = Value::string(std::move(s));
      return e;
    }
    if (tk.type == Tok::Int || tk.type == Tok::Float) {
      next();
      auto e = node(ExprKind::Literal, line);
      e->literal = tk.type == Tok::Int ? Value::integer(tk.ival) : Value::number(tk.fval);
      return e;
    }
    if (accept_op("(")) {
      if (accept_op(")")) return node(ExprKind::TupleLit, line);
      ExprPtr first = parse_expression(true);
      if (accept_op(")")) return first;
      auto tup = node(ExprKind::TupleLit, line);
      tup->kids.push_back(std::move(first));
      while (accept_op(",")) {
        if (is_op(")")) break;
        tup->kids.push_back(parse_expression(true));
      }
      expect_op(")");
      return tup;
    }
    if (accept_op("[")) {
      auto e = node(ExprKind::ListLit, line);
      while (!accept_op("]")) {
        if (!e->kids.empty()) expect_op(",");
        if (accept_op("]")) break;
        e->kids.push_back(parse_expression(true));
      }
      return e;
    }
    if (accept_op("{")) {
      auto e = node(ExprKind::DictLit, line);
      while (!accept_op("}")) {
        if (!e->kids.empty()) expect_op(",");
        if (accept_op("}")) break;
        e->kids.push_back(parse_expression(true));
        expect_op(":");
        e->kids.push_back(parse_expression(true));
      }
      return e;
    }
    fail("unexpected " + describe(tk));
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    bool first = true;
    while (!accept_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (accept_op(")")) break;
      if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
        std::string key = next().text;
        next();
        call.kwargs.emplace_back(key, parse_expression(true));
      } else {
        if (!call.kwargs.empty()) fail("invalid syntax for function call expression");
        call.kids.push_back(parse_expression(true));
      }
    }
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      int line = cur().line;
      if (accept_op(".")) {
        auto a = node(ExprKind::Attr, line);
        if (cur().type == Tok::Int) {
          a->kind = ExprKind::Item;
          a->kids.push_back(std::move(e));
          auto idx = node(ExprKind::Literal, line);
          idx->literal = Value::integer(next().ival);
          a->kids.push_back(std::move(idx));
        } else {
          a->name = expect_identifier();
          a->kids.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (accept_op("[")) {
        e = parse_subscript(std::move(e), line);
      } else if (is_op("(")) {
        auto c = node(ExprKind::Call, line);
        c->kids.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    bool is_slice = false;
    if (!is_op(":")) parts[0] = parse_expression(true);
    if (accept_op(":")) {
      is_slice = true;
      if (!is_op("]") && !is_op(":")) parts[1] = parse_expression(true);
      if (accept_op(":") && !is_op("]")) parts[2] = parse_expression(true);
    }
    expect_op("]");
    auto e = node(is_slice ? ExprKind::Slice : ExprKind::Item, line);
    e->kids.push_back(std::move(obj));
    if (is_slice) {
      for (auto& p : parts) e->kids.push_back(std::move(p));
    } else {
      e->kids.push_back(std::move(parts[0]));
    }
    return e;
  }

  ExprPtr parse_filter(ExprPtr operand) {
    int line = cur().line;
    auto f = node(ExprKind::Filter, line);
    f->name = expect_identifier();
    while (accept_op(".")) f->name += "." + expect_identifier();
    f->kids.push_back(std::move(operand));
    if (is_op("(")) parse_call_args(*f);
    return f;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (accept_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        int line = next().line;
        auto t = node(ExprKind::Test, line);
        t->negated = accept_name("not");
        t->name = expect_identifier();
        t->kids.push_back(std::move(e));
        if (is_op("(")) {
          parse_call_args(*t);
        } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Int ||
                    cur().type == Tok::Float || is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) fail("You cannot chain multiple tests with is");
          t->kids.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        auto c = node(ExprKind::Call, cur().line);
        c->kids.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_all(); }

}  // namespace ignis::text::jinja
