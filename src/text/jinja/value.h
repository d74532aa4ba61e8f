// Jinja values: the dynamic type the interpreter computes with, following Python's semantics.
//
// A Value is one of undefined / none / bool / int / float / string / list / dict / callable / namespace.
// Lists and dicts are shared (reference semantics, like Python objects); the chat-template sandbox never
// mutates them except through namespace attribute assignment. Dicts keep insertion order. Printing,
// truthiness, comparison and repr follow CPython (str(list) uses repr with single quotes, floats print
// as Python's repr). Values are not thread-safe to mutate; a render owns the values it creates.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ignis::text::jinja {

// An error raised while rendering (the Python exception's message); the evaluator adds the line.
struct RenderError {
  std::string message;
  int line = 0;
};
// raise_exception(): carries the template's own message unchanged.
struct RaisedError {
  std::string message;
};

[[noreturn]] void throw_render(std::string message);

// Deepest container nesting accepted from input JSON and printed by repr / tojson.
constexpr int kMaxNesting = 512;

enum class Type : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Function, Namespace };
// Python's flavour of a sequence; only repr and JSON differ between them.
enum class ListKind : uint8_t { List, Tuple, Generator, DictItems };

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Args;
using NativeFn = std::function<Value(Args&)>;
struct Function {
  std::string name;
  NativeFn fn;
};

struct Value {
  Type type = Type::Undefined;
  ListKind list_kind = ListKind::List;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String: the text; Undefined: the hint ("'x' is undefined")
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;  // Dict and Namespace
  std::shared_ptr<Function> fn;

  Value() = default;
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value number(double v);
  static Value string(std::string v);
  static Value make_list(List items = {}, ListKind kind = ListKind::List);
  static Value make_dict();
  static Value make_namespace();
  static Value function(std::string name, NativeFn fn);

  bool is_undefined() const { return type == Type::Undefined; }
  bool is_none() const { return type == Type::None; }
  bool is_string() const { return type == Type::String; }
  bool is_list() const { return type == Type::List; }
  bool is_dict() const { return type == Type::Dict; }
  bool is_number() const { return type == Type::Int || type == Type::Float || type == Type::Bool; }
  double as_double() const;

  bool truthy() const;
  // Python's str(): what {{ value }} prints ("" for undefined).
  std::string str() const;
  // Python's repr().
  std::string repr() const;
  // Python's type name as it appears in error messages ("str", "list", "NoneType", ...).
  std::string type_name() const;
  // Jinja's object description in undefined hints ("dict object", "list object", ...).
  std::string object_name() const;
  // Raise the UndefinedError this undefined carries.
  [[noreturn]] void fail_undefined() const;
};

struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  Value* find(const Value& key);
  const Value* find(const std::string& key) const;
  void set(Value key, Value value);
};

struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The argument at position `i` or named `name`; nullptr when not given.
  const Value* get(size_t i, const char* name) const;
  Value get_or(size_t i, const char* name, Value fallback) const;
  // Fails when more than `n_pos` positional arguments or a keyword outside `names` was passed.
  void check(const char* what, size_t n_pos, std::initializer_list<const char*> names) const;
};

// Python == (True == 1, 1 == 1.0, undefined == undefined, containers compared by value).
bool equals(const Value& a, const Value& b);
// Python <; raises TypeError for unorderable operands.
bool less(const Value& a, const Value& b);
// Python float repr ("1.0", "1e+16", "1.5e-05").
std::string float_repr(double v);
// Python json.dumps(v, ensure_ascii=ensure_ascii, indent=indent, separators=..., sort_keys=sort_keys).
// indent < 0 means None; `item_sep` / `key_sep` override the defaults when non-null.
std::string to_json(const Value& v, int indent, const std::string& indent_str, const char* item_sep,
                    const char* key_sep, bool sort_keys, bool ensure_ascii = false);
Value from_json(const nlohmann::ordered_json& j);

// UTF-8 helpers: strings index by code point like Python's str.
std::u32string utf8_decode(const std::string& s);
std::string utf8_encode(const std::u32string& s);
void utf8_append(std::string& out, char32_t c);
size_t utf8_length(const std::string& s);
bool py_isspace(char32_t c);

// Items a for loop visits: list elements, dict keys, string characters; raises for non-iterables.
List iterate(const Value& v);

}  // namespace ignis::text::jinja
