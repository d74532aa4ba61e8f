// Chat templates rendered with ignis's Jinja interpreter (see chat_template.h).
#include "text/chat_template.h"

#include <cstdlib>
#include <ctime>
#include <vector>

#include "core/error.h"
#include "text/jinja/eval.h"
#include "text/jinja/lexer.h"
#include "text/jinja/parser.h"

namespace ignis::text {

using namespace jinja;

struct ChatTemplate::Impl {
  Body body;
};

namespace {

[[noreturn]] void fail_render(const RenderError& e) {
  if (e.line > 0) fail("chat template line {}: {}", e.line, e.message);
  fail("chat template: {}", e.message);
}

std::tm clock_now(const std::string& fixed) {
  std::string spec = fixed;
  if (spec.empty())
    if (const char* env = std::getenv("IGNIS_FIXED_NOW")) spec = env;
  std::tm tm{};
  if (spec.empty()) {
    std::time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
    return tm;
  }
  int y, mo, d, h, mi, s;
  if (std::sscanf(spec.c_str(), "%d-%d-%d %d:%d:%d", &y, &mo, &d, &h, &mi, &s) != 6 || mo < 1 || mo > 12 ||
      d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60)
    fail("chat template clock '{}': expected YYYY-MM-DD HH:MM:SS", spec);
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  tm.tm_isdst = -1;
  std::tm norm = tm;
  timegm(&norm);  // fills tm_wday / tm_yday
  tm.tm_wday = norm.tm_wday;
  tm.tm_yday = norm.tm_yday;
  return tm;
}

Value global_range(Args& a) {
  for (const auto& v : a.pos)
    if (v.type != Type::Int && v.type != Type::Bool)
      throw_render("'" + v.type_name() + "' object cannot be interpreted as an integer");
  if (a.pos.empty() || a.pos.size() > 3 || !a.kw.empty()) throw_render("range expected 1 to 3 integer arguments");
  int64_t start = 0, stop, step = 1;
  auto iv = [](const Value& v) { return v.type == Type::Int ? v.i : static_cast<int64_t>(v.b); };
  if (a.pos.size() == 1) {
    stop = iv(a.pos[0]);
  } else {
    start = iv(a.pos[0]);
    stop = iv(a.pos[1]);
    if (a.pos.size() == 3) step = iv(a.pos[2]);
  }
  if (step == 0) throw_render("range() arg 3 must not be zero");
  // jinja2's sandbox refuses ranges longer than MAX_RANGE.
  constexpr int64_t kMaxRange = 100000;
  List out;
  int64_t k = start;
  while (step > 0 ? k < stop : k > stop) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange)
      throw_render("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    out.push_back(Value::integer(k));
    if (__builtin_add_overflow(k, step, &k)) break;
  }
  return Value::make_list(std::move(out));
}

// Namespaces made during one render. A namespace may end up holding itself (`set ns.me = ns`); clearing
// them all when the render ends breaks such cycles so nothing leaks.
struct NamespaceRegistry {
  std::vector<std::shared_ptr<Dict>> made;
  ~NamespaceRegistry() {
    for (auto& d : made) d->items.clear();
  }
};

Value global_namespace(Args& a) {
  Value ns = Value::make_namespace();
  for (const auto& v : a.pos) {
    if (v.type != Type::Dict) throw_render("namespace() positional argument must be a mapping");
    for (const auto& kv : v.dict->items) ns.dict->set(kv.first, kv.second);
  }
  for (const auto& kv : a.kw) ns.dict->set(Value::string(kv.first), kv.second);
  return ns;
}

Value global_dict(Args& a) {
  Value d = Value::make_dict();
  for (const auto& v : a.pos) {
    if (v.type != Type::Dict) throw_render("dict() positional argument must be a mapping");
    for (const auto& kv : v.dict->items) d.dict->set(kv.first, kv.second);
  }
  for (const auto& kv : a.kw) d.dict->set(Value::string(kv.first), kv.second);
  return d;
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source) : impl_(std::make_unique<Impl>()) {
  try {
    impl_->body = parse(tokenize(source, LexOptions{}));
  } catch (const RenderError& e) {
    fail_render(e);
  }
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const ChatTemplateInputs& in) const {
  NamespaceRegistry namespaces;
  try {
    auto globals = std::make_shared<Scope>();
    globals->set("range", Value::function("range", global_range));
    globals->set("namespace", Value::function("namespace", [&namespaces](Args& a) {
                   Value ns = global_namespace(a);
                   namespaces.made.push_back(ns.dict);
                   return ns;
                 }));
    globals->set("dict", Value::function("dict", global_dict));
    globals->set("raise_exception", Value::function("raise_exception", [](Args& a) -> Value {
                   throw RaisedError{a.pos.empty() ? std::string() : a.pos[0].str()};
                 }));
    std::tm now = clock_now(in.now);
    globals->set("strftime_now", Value::function("strftime_now", [now](Args& a) -> Value {
                   const Value* fmt = a.get(0, "format");
                   if (!fmt || fmt->type != Type::String) throw_render("strftime_now() expects a format string");
                   if (fmt->s.empty()) return Value::string("");
                   char buf[1024];
                   size_t n = std::strftime(buf, sizeof(buf), fmt->s.c_str(), &now);
                   if (n == 0 && fmt->s.size() > 256) throw_render("strftime_now(): format too long");
                   return Value::string(std::string(buf, n));
                 }));
    globals->set("messages", from_json(in.messages));
    globals->set("tools", from_json(in.tools));
    globals->set("documents", from_json(in.documents));
    globals->set("add_generation_prompt", Value::boolean(in.add_generation_prompt));
    globals->set("bos_token", Value::string(in.bos_token));
    globals->set("eos_token", Value::string(in.eos_token));
    if (in.extra.is_object())
      for (auto it = in.extra.begin(); it != in.extra.end(); ++it) globals->set(it.key(), from_json(it.value()));
    return Evaluator::render(impl_->body, globals);
  } catch (const RaisedError& e) {
    throw Error(e.message);
  } catch (const RenderError& e) {
    fail_render(e);
  }
}

const char* ChatTemplate::chatml_source() {
  return "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
         "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
         "{% endif %}";
}

}  // namespace ignis::text
