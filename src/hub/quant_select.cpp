#include "hub/quant_select.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "core/error.h"

namespace ignis::hub {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with_ci(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && lower(s.substr(s.size() - suffix.size())) == suffix;
}

// '_' is not a separator: it is inside quant names ("Q4_K_M"), so "Q4_K" only substring-matches "Q4_K_M".
bool is_sep(char c) { return c == '-' || c == '.' || c == '/'; }

// 0: QUANT appears as a whole token, 1: only as a substring, -1: absent.
int match_kind(const std::string& name, const std::string& quant) {
  std::string n = lower(name), q = lower(quant);
  int best = -1;
  for (size_t pos = n.find(q); pos != std::string::npos; pos = n.find(q, pos + 1)) {
    size_t end = pos + q.size();
    bool left = pos == 0 || is_sep(n[pos - 1]);
    bool right = end == n.size() || is_sep(n[end]);
    if (left && right) return 0;
    best = 1;
  }
  return best;
}

struct Candidate {
  std::string key;                 // the name matched against QUANT (split: the shared prefix)
  std::vector<std::string> parts;  // in order; a single file has one
  bool split = false;
  int n_total = 1;
};

std::vector<Candidate> gguf_candidates(const std::vector<std::string>& files) {
  static const std::regex split_re(R"(^(.*)-([0-9]{5})-of-([0-9]{5})\.gguf$)", std::regex::icase);
  std::vector<Candidate> out;
  std::map<std::string, Candidate> splits;  // keyed by prefix + total
  for (const auto& f : files) {
    if (!ends_with_ci(f, ".gguf") || lower(f).find("mmproj") != std::string::npos) continue;
    std::smatch m;
    if (std::regex_match(f, m, split_re)) {
      int total = std::stoi(m[3].str());
      auto& c = splits[m[1].str() + "#" + m[3].str()];
      c.key = m[1].str();
      c.split = true;
      c.n_total = total;
      c.parts.push_back(f);
    } else {
      out.push_back({f, {f}, false, 1});
    }
  }
  for (auto& [k, c] : splits) {
    std::sort(c.parts.begin(), c.parts.end());
    out.push_back(std::move(c));
  }
  return out;
}

const Candidate* pick(const std::vector<Candidate>& cands, const std::string& quant) {
  const Candidate* best = nullptr;
  std::tuple<int, int, size_t, std::string> best_score;
  for (const auto& c : cands) {
    int kind = match_kind(c.key, quant);
    if (kind < 0) continue;
    auto score = std::make_tuple(kind, c.split ? 1 : 0, c.key.size(), c.key);
    if (!best || score < best_score) {
      best = &c;
      best_score = score;
    }
  }
  return best;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

void check_repo_id(const std::string& repo) {
  auto slash = repo.find('/');
  bool ok = slash != std::string::npos && slash > 0 && slash + 1 < repo.size() &&
            repo.find('/', slash + 1) == std::string::npos && repo.size() <= 200 &&
            repo.find("..") == std::string::npos && repo[0] != '.' && repo[slash + 1] != '.';
  for (char c : repo)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/'))
      ok = false;
  if (!ok) fail("'{}': not a hub repo id; expected ORG/NAME (letters, digits, '-', '_', '.')", repo);
}

HfSpec parse_hf_spec(const std::string& spec) {
  HfSpec s;
  auto colon = spec.find(':');
  s.repo = spec.substr(0, colon);
  if (colon != std::string::npos) {
    s.quant = spec.substr(colon + 1);
    if (s.quant.empty() || s.quant.find_first_of("/:") != std::string::npos)
      fail("'{}': expected ORG/NAME[:QUANT] (e.g. Qwen/Qwen2.5-1.5B-Instruct-GGUF:Q4_K_M)", spec);
  }
  check_repo_id(s.repo);
  return s;
}

std::vector<std::string> available_quants(const std::vector<std::string>& files) {
  static const std::regex quant_re(R"(^(I?Q[0-9]+(_[A-Z0-9]+)*|TQ[0-9]_[0-9]|BF16|F16|F32|FP16|FP32)$)");
  std::set<std::string> out;
  for (const auto& c : gguf_candidates(files)) {
    std::string name = c.key;
    if (!c.split) name = name.substr(0, name.size() - 5);  // ".gguf"
    std::string tok, found;
    for (size_t i = 0; i <= name.size(); ++i) {
      if (i == name.size() || name[i] == '-' || name[i] == '.' || name[i] == '/') {
        if (std::regex_match(upper(tok), quant_re)) found = upper(tok);
        tok.clear();
      } else {
        tok += name[i];
      }
    }
    out.insert(found.empty() ? c.key : found);
  }
  return {out.begin(), out.end()};
}

std::vector<std::string> select_gguf(const std::string& repo, const std::vector<std::string>& files,
                                     const std::string& quant) {
  auto cands = gguf_candidates(files);
  if (cands.empty()) {
    std::vector<std::string> shown(files.begin(), files.begin() + std::min<size_t>(files.size(), 12));
    fail("{}: the repo has no .gguf files (it has: {}{})", repo, shown.empty() ? "nothing" : join(shown, ", "),
         files.size() > shown.size() ? ", ..." : "");
  }
  const std::string q = quant.empty() ? kDefaultQuant : quant;
  const Candidate* c = pick(cands, q);
  if (!c && quant.empty() && cands.size() == 1) c = &cands[0];
  if (!c)
    fail("{}: no .gguf file matches quant '{}'; available: {} (use {}:QUANT)", repo, q,
         join(available_quants(files), ", "), repo);
  if (c->split) {
    bool complete = static_cast<int>(c->parts.size()) == c->n_total;
    for (size_t i = 0; complete && i < c->parts.size(); ++i)
      complete = c->parts[i].size() > c->key.size() &&
                 c->parts[i].compare(c->key.size(), 7, fmt::format("-{:05}-", i + 1)) == 0;
    if (!complete)
      fail("{}: split model {}-*-of-{:05}.gguf is missing parts in the repo (has {})", repo, c->key,
           c->n_total, join(c->parts, ", "));
  }
  return c->parts;
}

}  // namespace ignis::hub
