// Jinja values with CPython semantics (see value.h).
#include "text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <utf8proc.h>

namespace ignis::text::jinja {

void throw_render(std::string message) { throw RenderError{std::move(message), 0}; }

Value Value::undefined(std::string hint) {
  Value v;
  v.s = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.type = Type::None;
  return v;
}
Value Value::boolean(bool x) {
  Value v;
  v.type = Type::Bool;
  v.b = x;
  return v;
}
Value Value::integer(int64_t x) {
  Value v;
  v.type = Type::Int;
  v.i = x;
  return v;
}
Value Value::number(double x) {
  Value v;
  v.type = Type::Float;
  v.f = x;
  return v;
}
Value Value::string(std::string x) {
  Value v;
  v.type = Type::String;
  v.s = std::move(x);
  return v;
}
Value Value::make_list(List items, ListKind kind) {
  Value v;
  v.type = Type::List;
  v.list_kind = kind;
  v.list = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::make_dict() {
  Value v;
  v.type = Type::Dict;
  v.dict = std::make_shared<Dict>();
  return v;
}
Value Value::make_namespace() {
  Value v = make_dict();
  v.type = Type::Namespace;
  return v;
}
Value Value::function(std::string name, NativeFn fn) {
  Value v;
  v.type = Type::Function;
  v.fn = std::make_shared<Function>(Function{std::move(name), std::move(fn)});
  return v;
}

double Value::as_double() const {
  switch (type) {
    case Type::Int: return static_cast<double>(i);
    case Type::Float: return f;
    case Type::Bool: return b ? 1.0 : 0.0;
    default: return 0.0;
  }
}

bool Value::truthy() const {
  switch (type) {
    case Type::Undefined:
    case Type::None: return false;
    case Type::Bool: return b;
    case Type::Int: return i != 0;
    case Type::Float: return f != 0.0;
    case Type::String: return !s.empty();
    case Type::List: return list_kind == ListKind::Generator || !list->empty();
    case Type::Dict: return !dict->items.empty();
    default: return true;
  }
}

std::string Value::type_name() const {
  switch (type) {
    case Type::Undefined: return "Undefined";
    case Type::None: return "NoneType";
    case Type::Bool: return "bool";
    case Type::Int: return "int";
    case Type::Float: return "float";
    case Type::String: return "str";
    case Type::List:
      switch (list_kind) {
        case ListKind::Tuple: return "tuple";
        case ListKind::Generator: return "generator";
        case ListKind::DictItems: return "dict_items";
        default: return "list";
      }
    case Type::Dict: return "dict";
    case Type::Function: return "function";
    case Type::Namespace: return "Namespace";
  }
  return "object";
}

std::string Value::object_name() const {
  if (type == Type::None) return "None";
  return type_name() + " object";
}

void Value::fail_undefined() const {
  throw_render(s.empty() ? std::string("value is undefined") : s);
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t epos = sci.find('e');
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (size_t k = 0; k < epos; ++k)
    if (sci[k] != '.') digits += sci[k];
  int n = static_cast<int>(digits.size());
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp >= n - 1) {
      out = digits + std::string(exp - (n - 1), '0') + ".0";
    } else if (exp >= 0) {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    } else {
      out = "0." + std::string(-exp - 1, '0') + digits;
    }
  }
  if (out.empty()) {
    out = digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return sign + out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t c;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {
      c = 0xFFFD;
      n = 1;
    }
    out += static_cast<char32_t>(c);
    p += n;
    left -= n;
  }
  return out;
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool py_isspace(char32_t c) {
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
  if (c < 0x80) return false;
  if (c == 0x85) return true;
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

static bool py_isprintable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  switch (cat) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
  }
}

static std::string string_repr(const std::string& s) {
  char quote = '\'';
  if (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) quote = '"';
  std::string out(1, quote);
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (py_isprintable(c)) {
      utf8_append(out, c);
    } else {
      char buf[16];
      if (c < 0x100) std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000) std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      else std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out += quote;
  return out;
}

std::string Value::repr() const {
  // A namespace can contain itself; Python prints such cycles as {...}, we refuse very deep nesting.
  static thread_local int depth = 0;
  struct Guard {
    Guard() {
      if (++depth > kMaxNesting) {
        --depth;
        throw_render("maximum recursion depth exceeded while getting the repr of an object");
      }
    }
    ~Guard() { --depth; }
  } guard;
  switch (type) {
    case Type::Undefined: return "Undefined";
    case Type::String: return string_repr(s);
    case Type::List: {
      std::string inner;
      for (size_t k = 0; k < list->size(); ++k) {
        if (k) inner += ", ";
        inner += (*list)[k].repr();
      }
      switch (list_kind) {
        case ListKind::Tuple: return "(" + inner + (list->size() == 1 ? ",)" : ")");
        case ListKind::Generator: return "<generator object>";
        case ListKind::DictItems: return "dict_items([" + inner + "])";
        default: return "[" + inner + "]";
      }
    }
    case Type::Dict:
    case Type::Namespace: {
      std::string out = "{";
      for (size_t k = 0; k < dict->items.size(); ++k) {
        if (k) out += ", ";
        out += dict->items[k].first.repr() + ": " + dict->items[k].second.repr();
      }
      out += "}";
      return type == Type::Namespace ? "<Namespace " + out + ">" : out;
    }
    case Type::Function: return "<function " + fn->name + ">";
    default: return str();
  }
}

std::string Value::str() const {
  switch (type) {
    case Type::Undefined: return "";
    case Type::None: return "None";
    case Type::Bool: return b ? "True" : "False";
    case Type::Int: return std::to_string(i);
    case Type::Float: return float_repr(f);
    case Type::String: return s;
    default: return repr();
  }
}

const Value* Dict::find(const Value& key) const {
  for (const auto& kv : items)
    if (equals(kv.first, key)) return &kv.second;
  return nullptr;
}
Value* Dict::find(const Value& key) {
  for (auto& kv : items)
    if (equals(kv.first, key)) return &kv.second;
  return nullptr;
}
const Value* Dict::find(const std::string& key) const {
  for (const auto& kv : items)
    if (kv.first.type == Type::String && kv.first.s == key) return &kv.second;
  return nullptr;
}
void Dict::set(Value key, Value value) {
  if (Value* v = find(key)) {
    *v = std::move(value);
    return;
  }
  items.emplace_back(std::move(key), std::move(value));
}

const Value* Args::get(size_t i, const char* name) const {
  if (i < pos.size()) return &pos[i];
  if (name)
    for (const auto& kv : kw)
      if (kv.first == name) return &kv.second;
  return nullptr;
}
Value Args::get_or(size_t i, const char* name, Value fallback) const {
  const Value* v = get(i, name);
  return v ? *v : std::move(fallback);
}
void Args::check(const char* what, size_t n_pos, std::initializer_list<const char*> names) const {
  if (pos.size() > n_pos)
    throw_render(std::string(what) + "() takes at most " + std::to_string(n_pos) + " positional arguments (" +
                 std::to_string(pos.size()) + " given)");
  for (const auto& kv : kw) {
    bool ok = false;
    for (const char* n : names) ok = ok || kv.first == n;
    if (!ok) throw_render(std::string(what) + "() got an unexpected keyword argument '" + kv.first + "'");
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.type == Type::Float || b.type == Type::Float) return a.as_double() == b.as_double();
    return (a.type == Type::Int ? a.i : a.b) == (b.type == Type::Int ? b.i : b.b);
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Type::Undefined:
    case Type::None: return true;
    case Type::String: return a.s == b.s;
    case Type::List: {
      if (a.list_kind != b.list_kind) return false;  // Python: [1] != (1,)
      if (a.list_kind == ListKind::Generator) return a.list == b.list;
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equals((*a.list)[k], (*b.list)[k])) return false;
      return true;
    }
    case Type::Dict: {
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& kv : a.dict->items) {
        const Value* o = b.dict->find(kv.first);
        if (!o || !equals(kv.second, *o)) return false;
      }
      return true;
    }
    case Type::Namespace: return a.dict == b.dict;
    case Type::Function: return a.fn == b.fn;
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.type == Type::Float || b.type == Type::Float) return a.as_double() < b.as_double();
    return (a.type == Type::Int ? a.i : a.b) < (b.type == Type::Int ? b.i : b.b);
  }
  if (a.type == Type::String && b.type == Type::String) return a.s < b.s;
  if (a.type == Type::List && b.type == Type::List) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      if (!equals((*a.list)[k], (*b.list)[k])) return less((*a.list)[k], (*b.list)[k]);
    }
    return a.list->size() < b.list->size();
  }
  throw_render("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  if (ensure_ascii) {
    for (char32_t c : utf8_decode(s)) {
      if (c < 0x80) {
        std::string one(1, static_cast<char>(c));
        std::string esc;
        json_string(esc, one, false);
        out.append(esc, 1, esc.size() - 2);
        continue;
      }
      char buf[16];
      if (c >= 0x10000) {
        char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    }
    out += '"';
    return;
  }
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

static std::string json_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-Infinity" : "Infinity";
  return float_repr(v);
}

namespace {
struct JsonWriter {
  int indent;
  std::string indent_str;
  std::string item_sep, key_sep;
  bool sort_keys;
  bool ensure_ascii;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int k = 0; k < level; ++k) out += indent_str;
  }
  static std::string key_text(const Value& k) {
    switch (k.type) {
      case Type::String: return k.s;
      case Type::Int: return std::to_string(k.i);
      case Type::Float: return json_float(k.f);
      case Type::Bool: return k.b ? "true" : "false";
      case Type::None: return "null";
      default: throw_render("keys must be str, int, float, bool or None, not " + k.type_name());
    }
  }
  void write(const Value& v, int level) {
    if (level > kMaxNesting) throw_render("Circular reference detected");
    switch (v.type) {
      case Type::None: out += "null"; return;
      case Type::Bool: out += v.b ? "true" : "false"; return;
      case Type::Int: out += std::to_string(v.i); return;
      case Type::Float: out += json_float(v.f); return;
      case Type::String: json_string(out, v.s, ensure_ascii); return;
      case Type::List:
        if (v.list_kind == ListKind::List || v.list_kind == ListKind::Tuple) {
          if (v.list->empty()) {
            out += "[]";
            return;
          }
          out += '[';
          for (size_t k = 0; k < v.list->size(); ++k) {
            if (k) out += item_sep;
            if (indent >= 0) newline(level + 1);
            write((*v.list)[k], level + 1);
          }
          if (indent >= 0) newline(level);
          out += ']';
          return;
        }
        break;
      case Type::Dict: {
        if (v.dict->items.empty()) {
          out += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> kvs;
        for (const auto& kv : v.dict->items) kvs.emplace_back(key_text(kv.first), &kv.second);
        if (sort_keys)
          std::stable_sort(kvs.begin(), kvs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        out += '{';
        for (size_t k = 0; k < kvs.size(); ++k) {
          if (k) out += item_sep;
          if (indent >= 0) newline(level + 1);
          json_string(out, kvs[k].first, ensure_ascii);
          out += key_sep;
          write(*kvs[k].second, level + 1);
        }
        if (indent >= 0) newline(level);
        out += '}';
        return;
      }
      default: break;
    }
    throw_render("Object of type " + v.type_name() + " is not JSON serializable");
  }
};
}  // namespace

std::string to_json(const Value& v, int indent, const std::string& indent_str, const char* item_sep,
                    const char* key_sep, bool sort_keys, bool ensure_ascii) {
  JsonWriter w{indent, indent_str, item_sep ? item_sep : (indent >= 0 ? "," : ", "), key_sep ? key_sep : ": ",
               sort_keys, ensure_ascii, {}};
  w.write(v, 0);
  return std::move(w.out);
}

static Value from_json_at(const nlohmann::ordered_json& j, int depth);

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

static Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxNesting) throw_render("input JSON nested too deeply (more than 512 levels)");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::make_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it) d.dict->set(Value::string(it.key()), from_json_at(it.value(), depth + 1));
      return d;
    }
    default: return Value::none();
  }
}

List iterate(const Value& v) {
  switch (v.type) {
    case Type::Undefined: return {};
    case Type::List: return *v.list;
    case Type::Dict: {
      List keys;
      for (const auto& kv : v.dict->items) keys.push_back(kv.first);
      return keys;
    }
    case Type::String: {
      List chars;
      for (char32_t c : utf8_decode(v.s)) {
        std::string one;
        utf8_append(one, c);
        chars.push_back(Value::string(std::move(one)));
      }
      return chars;
    }
    default: throw_render("'" + v.type_name() + "' object is not iterable");
  }
}

}  // namespace ignis::text::jinja
