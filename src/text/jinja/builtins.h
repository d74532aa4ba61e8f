// Jinja builtins: filters, tests, attribute / item access and Python methods on str, list and dict.
//
// Semantics follow jinja2 3.1 inside transformers' ImmutableSandboxedEnvironment: methods that would
// mutate a list or dict are unsafe and raise when called; `tojson` is Hugging Face's json.dumps wrapper.
// Stateless; thread-safe.
#pragma once

#include <string>

#include "text/jinja/value.h"

namespace ignis::text::jinja {

bool has_filter(const std::string& name);
bool has_test(const std::string& name);

// `call` invokes a callable value (filters such as map() need it for macros and methods).
Value apply_filter(const std::string& name, const Value& operand, Args& args);
bool apply_test(const std::string& name, const Value& v, Args& args);

// jinja2's environment.getattr (`obj.name`: attribute first, then item) and getitem (`obj[key]`:
// item first, then attribute). Missing entries are undefined values carrying jinja2's hint.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] with Python's slice semantics (null pointers for absent bounds).
Value slice(const Value& obj, const Value* start, const Value* stop, const Value* step);

Value call_value(const Value& fn, Args& args);

// Python str methods used by filters as well.
std::string py_strip(const std::string& s, const Value* chars, bool left, bool right);
std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
// markupsafe.escape: & < > " ' as HTML entities.
std::string html_escape(const std::string& s);
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count);

}  // namespace ignis::text::jinja
