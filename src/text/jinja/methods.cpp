// Attribute / item access, slicing, calls and the Python methods of str, list and dict (see builtins.h).
#include <algorithm>

#include <utf8proc.h>

#include "text/jinja/builtins.h"

namespace ignis::text::jinja {

namespace {

Value undefined_attr(const Value& obj, const std::string& name) {
  return Value::undefined("'" + obj.object_name() + "' has no attribute '" + name + "'");
}

std::string str_arg(const Args& a, size_t i, const char* name, const char* method) {
  const Value* v = a.get(i, name);
  if (!v) throw_render(std::string(method) + "() missing required argument");
  if (v->type != Type::String)
    throw_render(std::string(method) + "() argument must be str, not " + v->type_name());
  return v->s;
}

int64_t int_arg(const Args& a, size_t i, const char* name, int64_t fallback) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return fallback;
  if (v->type == Type::Int) return v->i;
  if (v->type == Type::Bool) return v->b;
  throw_render("'" + v->type_name() + "' object cannot be interpreted as an integer");
}

bool is_cased(char32_t c) {
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

Value split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  List parts;
  if (!sep || sep->is_none()) {
    std::u32string u = utf8_decode(s);
    std::vector<std::u32string> words;
    if (!from_right) {
      size_t k = 0;
      while (k < u.size()) {
        while (k < u.size() && py_isspace(u[k])) ++k;
        if (k >= u.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t e = u.size();
          while (e > k && py_isspace(u[e - 1])) --e;
          words.push_back(u.substr(k, e - k));
          break;
        }
        size_t b = k;
        while (k < u.size() && !py_isspace(u[k])) ++k;
        words.push_back(u.substr(b, k - b));
      }
    } else {
      size_t k = u.size();
      while (k > 0) {
        while (k > 0 && py_isspace(u[k - 1])) --k;
        if (k == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t b = 0;
          while (b < k && py_isspace(u[b])) ++b;
          words.push_back(u.substr(b, k - b));
          break;
        }
        size_t e = k;
        while (k > 0 && !py_isspace(u[k - 1])) --k;
        words.push_back(u.substr(k, e - k));
      }
      std::reverse(words.begin(), words.end());
    }
    for (auto& w : words) parts.push_back(Value::string(utf8_encode(w)));
    return Value::make_list(std::move(parts));
  }
  if (sep->type != Type::String) throw_render("must be str or None, not " + sep->type_name());
  const std::string& d = sep->s;
  if (d.empty()) throw_render("empty separator");
  std::vector<std::string> pieces;
  if (!from_right) {
    size_t start = 0;
    while (true) {
      size_t at = s.find(d, start);
      if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit)) {
        pieces.push_back(s.substr(start));
        break;
      }
      pieces.push_back(s.substr(start, at - start));
      start = at + d.size();
    }
  } else {
    size_t end = s.size();
    while (true) {
      size_t at = end >= d.size() ? s.rfind(d, end - d.size()) : std::string::npos;
      if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit)) {
        pieces.push_back(s.substr(0, end));
        break;
      }
      pieces.push_back(s.substr(at + d.size(), end - at - d.size()));
      end = at;
    }
    std::reverse(pieces.begin(), pieces.end());
  }
  for (auto& p : pieces) parts.push_back(Value::string(std::move(p)));
  return Value::make_list(std::move(parts));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix, const char* method) {
  auto one = [&](const Value& a) {
    if (a.type != Type::String)
      throw_render(std::string(method) + " first arg must be str or a tuple of str, not " + a.type_name());
    if (a.s.size() > s.size()) return false;
    return prefix ? s.compare(0, a.s.size(), a.s) == 0 : s.compare(s.size() - a.s.size(), a.s.size(), a.s) == 0;
  };
  if (affix.type == Type::List && affix.list_kind == ListKind::Tuple) {
    for (const auto& a : *affix.list)
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

std::string py_title(const std::string& s) {
  std::u32string u = utf8_decode(s);
  bool prev_cased = false;
  for (auto& c : u) {
    bool cased = is_cased(c);
    if (cased) {
      c = static_cast<char32_t>(prev_cased ? utf8proc_tolower(static_cast<utf8proc_int32_t>(c))
                                           : utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
    }
    prev_cased = cased;
  }
  return utf8_encode(u);
}

std::string py_capitalize(const std::string& s) {
  std::u32string u = utf8_decode(s);
  for (size_t k = 0; k < u.size(); ++k)
    u[k] = static_cast<char32_t>(k == 0 ? utf8proc_totitle(static_cast<utf8proc_int32_t>(u[k]))
                                        : utf8proc_tolower(static_cast<utf8proc_int32_t>(u[k])));
  return utf8_encode(u);
}

Value str_format(const std::string& fmt, const Args& a) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    char c = fmt[k];
    if (c == '{' && k + 1 < fmt.size() && fmt[k + 1] == '{') {
      out += '{';
      ++k;
    } else if (c == '}' && k + 1 < fmt.size() && fmt[k + 1] == '}') {
      out += '}';
      ++k;
    } else if (c == '{') {
      size_t e = fmt.find('}', k);
      if (e == std::string::npos) throw_render("Single '{' encountered in format string");
      std::string field = fmt.substr(k + 1, e - k - 1);
      if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
        throw_render("format specs are not supported in str.format: '" + field + "'");
      const Value* v = nullptr;
      if (field.empty()) {
        v = a.get(auto_idx++, nullptr);
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        v = a.get(static_cast<size_t>(std::stoul(field)), nullptr);
      } else {
        for (const auto& kv : a.kw)
          if (kv.first == field) v = &kv.second;
        if (!v) throw_render("'" + field + "'");
      }
      if (!v) throw_render("Replacement index out of range for positional args tuple");
      out += v->str();
      k = e;
    } else if (c == '}') {
      throw_render("Single '}' encountered in format string");
    } else {
      out += c;
    }
  }
  return Value::string(std::move(out));
}

Value string_method(const std::string& s, const std::string& name, Args& a) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = a.get(0, nullptr);
    return Value::string(py_strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit")
    return split(s, a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1), name == "rsplit");
  if (name == "startswith" || name == "endswith") {
    const Value* affix = a.get(0, nullptr);
    if (!affix) throw_render(name + "() takes at least 1 argument (0 given)");
    return Value::boolean(affix_match(s, *affix, name == "startswith", name.c_str()));
  }
  if (name == "replace")
    return Value::string(py_replace(s, str_arg(a, 0, nullptr, "replace"), str_arg(a, 1, nullptr, "replace"),
                                    int_arg(a, 2, "count", -1)));
  if (name == "upper") return Value::string(py_upper(s));
  if (name == "lower") return Value::string(py_lower(s));
  if (name == "title") return Value::string(py_title(s));
  if (name == "capitalize") return Value::string(py_capitalize(s));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    std::string sub = str_arg(a, 0, nullptr, name.c_str());
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s)) + 1);
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value::integer(n);
    }
    size_t at = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos) {
      if (name == "index" || name == "rindex") throw_render("substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(utf8_length(s.substr(0, at))));
  }
  if (name == "join") {
    const Value* it = a.get(0, nullptr);
    if (!it) throw_render("join() takes exactly one argument (0 given)");
    std::string out;
    bool first = true;
    for (const auto& v : iterate(*it)) {
      if (v.type != Type::String) throw_render("sequence item: expected str instance, " + v.type_name() + " found");
      if (!first) out += s;
      first = false;
      out += v.s;
    }
    return Value::string(std::move(out));
  }
  if (name == "splitlines") {
    List lines;
    std::string cur;
    bool keep = a.get_or(0, "keepends", Value::boolean(false)).truthy();
    std::u32string u = utf8_decode(s);
    for (size_t k = 0; k < u.size(); ++k) {
      char32_t c = u[k];
      bool br = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
                c == 0x2028 || c == 0x2029;
      if (!br) {
        utf8_append(cur, c);
        continue;
      }
      if (keep) utf8_append(cur, c);
      if (c == '\r' && k + 1 < u.size() && u[k + 1] == '\n') {
        if (keep) cur += '\n';
        ++k;
      }
      lines.push_back(Value::string(std::move(cur)));
      cur.clear();
    }
    if (!cur.empty()) lines.push_back(Value::string(std::move(cur)));
    return Value::make_list(std::move(lines));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    std::string x = str_arg(a, 0, nullptr, name.c_str());
    bool pre = name == "removeprefix";
    if (affix_match(s, Value::string(x), pre, name.c_str()))
      return Value::string(pre ? s.substr(x.size()) : s.substr(0, s.size() - x.size()));
    return Value::string(s);
  }
  if (name == "format") return str_format(s, a);
  if (name == "expandtabs") {
    int64_t tab = int_arg(a, 0, "tabsize", 8);
    std::string out;
    int64_t col = 0;
    for (char32_t c : utf8_decode(s)) {
      if (c == '\t') {
        if (tab > 0) {
          int64_t n = tab - col % tab;
          out.append(static_cast<size_t>(n), ' ');
          col += n;
        }
      } else {
        utf8_append(out, c);
        col = (c == '\n' || c == '\r') ? 0 : col + 1;
      }
    }
    return Value::string(std::move(out));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" || name == "isupper" ||
      name == "islower") {
    std::u32string u = utf8_decode(s);
    if (u.empty()) return Value::boolean(false);
    bool any_cased = false, ok = true;
    for (char32_t c : u) {
      auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
      bool digit = cat == UTF8PROC_CATEGORY_ND;
      bool alpha = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
      if (name == "isdigit") ok = ok && digit;
      else if (name == "isalpha") ok = ok && alpha;
      else if (name == "isalnum") ok = ok && (alpha || digit);
      else if (name == "isspace") ok = ok && py_isspace(c);
      else if (name == "isupper") {
        ok = ok && cat != UTF8PROC_CATEGORY_LL;
        any_cased = any_cased || cat == UTF8PROC_CATEGORY_LU;
      } else {
        ok = ok && cat != UTF8PROC_CATEGORY_LU;
        any_cased = any_cased || cat == UTF8PROC_CATEGORY_LL;
      }
    }
    if (name == "isupper" || name == "islower") ok = ok && any_cased;
    return Value::boolean(ok);
  }
  throw_render("'str' object has no attribute '" + name + "'");
}

const char* const kStrMethods[] = {"strip",  "lstrip",  "rstrip",  "split",     "rsplit",       "startswith",
                                   "endswith", "replace", "upper", "lower",     "title",        "capitalize",
                                   "find",   "rfind",   "index",   "rindex",    "count",        "join",
                                   "splitlines", "removeprefix", "removesuffix", "format", "expandtabs", "isdigit", "isalpha",
                                   "isalnum", "isspace", "isupper", "islower"};
const char* const kListUnsafe[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};
const char* const kDictUnsafe[] = {"pop", "popitem", "setdefault", "update", "clear"};

template <size_t N>
bool in_table(const char* const (&table)[N], const std::string& name) {
  for (const char* n : table)
    if (name == n) return true;
  return false;
}

Value unsafe(const std::string& name, const Value& obj) {
  std::string msg = "access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.";
  return Value::function(name, [msg](Args&) -> Value { throw_render(msg); });
}

Value dict_items(const Value& d) {
  List items;
  for (const auto& kv : d.dict->items) items.push_back(Value::make_list({kv.first, kv.second}, ListKind::Tuple));
  return Value::make_list(std::move(items), ListKind::DictItems);
}

Value method_of(const Value& obj, const std::string& name) {
  if (obj.type == Type::String) {
    if (!in_table(kStrMethods, name)) return {};
    std::string s = obj.s;
    return Value::function(name, [s, name](Args& a) { return string_method(s, name, a); });
  }
  if (obj.type == Type::List && obj.list_kind != ListKind::Generator) {
    if (in_table(kListUnsafe, name)) return unsafe(name, obj);
    if (name == "index" || name == "count") {
      Value self = obj;
      return Value::function(name, [self, name](Args& a) -> Value {
        const Value* x = a.get(0, nullptr);
        if (!x) throw_render(name + "() takes exactly one argument (0 given)");
        int64_t n = 0;
        for (size_t k = 0; k < self.list->size(); ++k) {
          if (!equals((*self.list)[k], *x)) continue;
          if (name == "index") return Value::integer(static_cast<int64_t>(k));
          ++n;
        }
        if (name == "index") throw_render(x->repr() + " is not in list");
        return Value::integer(n);
      });
    }
    return {};
  }
  if (obj.type == Type::Dict) {
    if (in_table(kDictUnsafe, name)) return unsafe(name, obj);
    Value self = obj;
    if (name == "get")
      return Value::function(name, [self](Args& a) -> Value {
        const Value* k = a.get(0, nullptr);
        if (!k) throw_render("get expected at least 1 argument, got 0");
        const Value* v = self.dict->find(*k);
        return v ? *v : a.get_or(1, nullptr, Value::none());
      });
    if (name == "items") return Value::function(name, [self](Args&) { return dict_items(self); });
    if (name == "keys" || name == "values")
      return Value::function(name, [self, name](Args&) {
        List out;
        for (const auto& kv : self.dict->items) out.push_back(name == "keys" ? kv.first : kv.second);
        return Value::make_list(std::move(out));
      });
    if (name == "copy") return Value::function(name, [self](Args&) {
        Value d = Value::make_dict();
        *d.dict = *self.dict;
        return d;
      });
  }
  return {};
}

}  // namespace

std::string py_strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::u32string u = utf8_decode(s);
  std::u32string set;
  bool ws = !chars || chars->is_none();
  if (!ws) {
    if (chars->type != Type::String) throw_render("strip arg must be None or str");
    set = utf8_decode(chars->s);
  }
  auto strip_me = [&](char32_t c) { return ws ? py_isspace(c) : set.find(c) != std::u32string::npos; };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_me(u[b])) ++b;
  if (right)
    while (e > b && strip_me(u[e - 1])) --e;
  return utf8_encode(u.substr(b, e - b));
}

std::string py_upper(const std::string& s) {
  std::string out;
  for (char32_t c : utf8_decode(s)) {
    if (c == 0xDF) {  // Python's full case mapping: sharp s upper-cases to "SS"
      out += "SS";
      continue;
    }
    utf8_append(out, static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))));
  }
  return out;
}

std::string py_lower(const std::string& s) {
  std::u32string u = utf8_decode(s);
  for (auto& c : u) c = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  return utf8_encode(u);
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `repl` between every character (and at both ends).
    std::u32string u = utf8_decode(s);
    int64_t n = 0;
    for (size_t k = 0; k <= u.size(); ++k) {
      if (count < 0 || n < count) {
        out += repl;
        ++n;
      }
      if (k < u.size()) utf8_append(out, u[k]);
    }
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += repl;
    start = at + old.size();
    ++n;
  }
  out.append(s, start, std::string::npos);
  return out;
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.type == Type::Namespace) {
    const Value* v = obj.dict->find(name);
    return v ? *v : undefined_attr(obj, name);
  }
  Value m = method_of(obj, name);
  if (!m.is_undefined()) return m;
  if (obj.type == Type::Dict) {
    const Value* v = obj.dict->find(name);
    if (v) return *v;
  }
  return undefined_attr(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) obj.fail_undefined();
  if (obj.type == Type::Dict) {
    const Value* v = obj.dict->find(key);
    if (v) return *v;
  } else if ((obj.type == Type::List && obj.list_kind != ListKind::Generator &&
              obj.list_kind != ListKind::DictItems) ||
             obj.type == Type::String) {
    if (key.type == Type::Int || key.type == Type::Bool) {
      int64_t i = key.type == Type::Int ? key.i : key.b;
      if (obj.type == Type::List) {
        int64_t n = static_cast<int64_t>(obj.list->size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return (*obj.list)[static_cast<size_t>(i)];
      } else {
        std::u32string u = utf8_decode(obj.s);
        int64_t n = static_cast<int64_t>(u.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
          std::string one;
          utf8_append(one, u[static_cast<size_t>(i)]);
          return Value::string(std::move(one));
        }
      }
    }
  }
  if (key.type == Type::String) return get_attr(obj, key.s);
  return Value::undefined("'" + obj.object_name() + "' has no attribute " + key.repr());
}

Value slice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
  auto as_index = [](const Value* v) -> int64_t {
    if (v->type == Type::Int) return v->i;
    if (v->type == Type::Bool) return v->b;
    throw_render("slice indices must be integers or None or have an __index__ method");
  };
  bool is_str = obj.type == Type::String;
  if (!is_str && !(obj.type == Type::List && obj.list_kind != ListKind::Generator &&
                   obj.list_kind != ListKind::DictItems))
    throw_render("'" + obj.type_name() + "' object is not subscriptable");
  std::u32string u = is_str ? utf8_decode(obj.s) : std::u32string();
  int64_t n = is_str ? static_cast<int64_t>(u.size()) : static_cast<int64_t>(obj.list->size());
  int64_t st = step ? as_index(step) : 1;
  if (st == 0) throw_render("slice step cannot be zero");
  int64_t b, e;
  auto adjust = [&](const Value* v, int64_t dflt, int64_t lo, int64_t hi) {
    if (!v) return dflt;
    int64_t x = as_index(v);
    if (x < 0) x += n;
    return std::clamp(x, lo, hi);
  };
  if (st > 0) {
    b = adjust(start, 0, 0, n);
    e = adjust(stop, n, 0, n);
  } else {
    b = adjust(start, n - 1, -1, n - 1);
    e = adjust(stop, -1, -1, n - 1);
  }
  std::u32string su;
  List sl;
  for (int64_t k = b; st > 0 ? k < e : k > e; k += st) {
    if (is_str) su += u[static_cast<size_t>(k)];
    else sl.push_back((*obj.list)[static_cast<size_t>(k)]);
  }
  if (is_str) return Value::string(utf8_encode(su));
  return Value::make_list(std::move(sl), obj.list_kind);
}

Value call_value(const Value& fn, Args& args) {
  if (fn.is_undefined()) fn.fail_undefined();
  if (fn.type != Type::Function) throw_render("'" + fn.type_name() + "' object is not callable");
  return fn.fn->fn(args);
}

}  // namespace ignis::text::jinja
