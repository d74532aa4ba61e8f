// Jinja evaluator: walks a parsed template and writes its output.
//
// One Evaluator per render: it owns the scopes and values created while rendering, reads the shared
// immutable syntax tree, and is not thread-safe itself (render concurrently with separate Evaluators).
// Scoping follows jinja2: for loops, macros and call blocks open scopes; `set` inside them stays local,
// namespace() objects carry state out.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/ast.h"

namespace ignis::text::jinja {

struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v);
};
using ScopePtr = std::shared_ptr<Scope>;

class Evaluator {
 public:
  // Renders `body` with `globals` as the outermost scope. Throws RenderError (with line) or RaisedError.
  static std::string render(const Body& body, ScopePtr globals);

 private:
  enum class Flow { Normal, Break, Continue };
  static constexpr int kMaxCallDepth = 200;  // Python would raise RecursionError; we must not overflow
  int call_depth_ = 0;
  // Scopes captured by macros. Macros hold plain pointers to their defining scope (a scope holds its
  // macros, so shared ownership would be a cycle); the evaluator keeps those scopes alive to the end.
  std::vector<ScopePtr> closures_;

  Flow exec_body(const Body& body, const ScopePtr& scope, std::string& out);
  Flow exec(const Stmt& s, const ScopePtr& scope, std::string& out);
  Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  void exec_set(const Stmt& s, const ScopePtr& scope);
  Value make_macro(const Stmt& s, const ScopePtr& scope, const std::string& name);
  std::string capture(const Body& body, const ScopePtr& scope);

  Value eval(const Expr& e, const ScopePtr& scope);
  Value eval_inner(const Expr& e, const ScopePtr& scope);
  Value eval_binary(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  Args eval_args(const Expr& e, const ScopePtr& scope, size_t first_arg);
  Value apply_filters(const std::vector<ExprPtr>& filters, Value v, const ScopePtr& scope);
};

// Python binary arithmetic (+ - * / // % **) with its TypeError messages.
Value arith(const std::string& op, const Value& a, const Value& b);
// Python `item in container`.
bool contains(const Value& container, const Value& item);
// Binds `names` to `v` (unpacking a sequence when there are several names).
void assign_targets(Scope& scope, const std::vector<std::string>& names, const Value& v);

}  // namespace ignis::text::jinja
