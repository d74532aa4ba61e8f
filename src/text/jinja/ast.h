// Jinja syntax tree: expressions and statements produced by the parser, walked by the evaluator.
//
// The tree is immutable once parsed and owned by the template; rendering only reads it, so one tree
// may be rendered from several threads at once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace ignis::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Literal,   // literal
  Name,      // name
  ListLit,   // kids: elements
  TupleLit,  // kids: elements
  DictLit,   // kids: key, value, key, value, ...
  Attr,      // kids[0].name
  Item,      // kids[0][kids[1]]
  Slice,     // kids[0][kids[1]:kids[2]:kids[3]] (null when absent)
  Call,      // kids[0](kids[1..], kwargs)
  Filter,    // kids[0] | name(kids[1..], kwargs); kids[0] null in filter blocks
  Test,      // kids[0] is [not] name(kids[1..], kwargs)
  Unary,     // op kids[0]: "-", "+", "not"
  Binary,    // kids[0] op kids[1]: + - * / // % ** ~ and or
  Compare,   // kids[0] ops[0] kids[1] ops[1] kids[2] ...
  Cond,      // kids[0] if kids[1] else kids[2] (kids[2] null when absent)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value literal;
  std::string name;  // Name / Attr / Filter / Test name, Unary / Binary operator
  std::vector<ExprPtr> kids;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // Compare operators: == != < > <= >= in notin
  bool negated = false;          // Test: `is not`
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  Text,         // text
  Output,       // {{ expr }}
  If,           // conds[i] -> bodies[i]; else_body
  For,          // for targets in expr [if cond] body [else else_body]
  Set,          // set target = expr (target: names or ns.attr in target_expr)
  SetBlock,     // set name [| filters] body endset
  Macro,        // macro name(params=defaults) body
  CallBlock,    // call(params) expr body
  FilterBlock,  // filter filters body
  Break,
  Continue,
  Scope,        // body run as is (generation, with)
  With,         // with targets = values body
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;  // Text; Macro name
  ExprPtr expr;      // Output / For iterable / Set value / CallBlock call
  ExprPtr cond;      // For filter
  ExprPtr target_expr;              // Set: namespace attribute target (Attr expr)
  std::vector<std::string> targets;  // For / Set / SetBlock / With names
  std::vector<ExprPtr> conds;        // If conditions; With values
  std::vector<Body> bodies;          // If bodies
  Body body;
  Body else_body;
  std::vector<std::string> params;  // Macro / CallBlock parameters
  std::vector<ExprPtr> defaults;    // parallel to params; null when none
  std::vector<ExprPtr> filters;     // SetBlock / FilterBlock: Filter exprs with null operand
};

}  // namespace ignis::text::jinja
