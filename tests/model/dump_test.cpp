// IGNIS_DUMP writes every named intermediate of a forward pass as .npy files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "model/model.h"
#include "model_test_util.h"

namespace ignis::model::test {
namespace {

struct Npy {
  std::string header;
  std::vector<float> data;
};

Npy read_npy(const std::string& path) {
  const std::string bytes = read_text(path);
  EXPECT_EQ(bytes.compare(0, 6, "\x93NUMPY"), 0);
  uint16_t hlen = 0;
  std::memcpy(&hlen, bytes.data() + 8, 2);
  EXPECT_EQ((10 + hlen) % 64, 0);
  Npy n;
  n.header = bytes.substr(10, hlen);
  n.data.resize((bytes.size() - 10 - hlen) / 4);
  std::memcpy(n.data.data(), bytes.data() + 10 + hlen, n.data.size() * 4);
  return n;
}

TEST(Dump, WritesNamedIntermediatesOfEveryLayer) {
  namespace fs = std::filesystem;
  const fs::path dir = temp_path("dump");
  fs::remove_all(dir);
  auto model = Model::load(stories_path());
  ThreadPool pool(1);
  auto cache = model->new_cache(8);
  const std::vector<int32_t> tokens = {1, 403, 407};
  std::vector<float> logits(3 * 512);
  setenv("IGNIS_DUMP", dir.c_str(), 1);
  model->forward(*cache, tokens, logits.data(), true, pool);
  unsetenv("IGNIS_DUMP");

  std::map<std::string, std::string> files;  // name without the call prefix -> path
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    files[f.substr(f.find('_') + 1)] = e.path().string();
  }
  for (int il = 0; il < 5; ++il) {
    for (const char* name : {"attn_norm", "Qcur", "Kcur", "Vcur", "Qcur_rope", "Kcur_rope", "kqv_out", "attn_out",
                             "ffn_inp", "ffn_norm", "ffn_out", "l_out"}) {
      EXPECT_TRUE(files.count(std::string(name) + "-" + std::to_string(il) + ".npy")) << name << " " << il;
    }
  }
  ASSERT_TRUE(files.count("Kcur-2.npy"));
  const Npy k = read_npy(files["Kcur-2.npy"]);
  EXPECT_NE(k.header.find("'shape': (3, 32)"), std::string::npos) << k.header;
  EXPECT_EQ(k.data.size(), 3u * 32);
  ASSERT_TRUE(files.count("result_output.npy"));
  const Npy out = read_npy(files["result_output.npy"]);
  EXPECT_NE(out.header.find("'shape': (3, 512)"), std::string::npos) << out.header;
  EXPECT_EQ(out.data, logits);

  // Off again: a second forward writes nothing.
  const size_t n_files = files.size();
  model->forward(*cache, std::span(tokens).first(1), logits.data(), false, pool);
  EXPECT_EQ(static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator())), n_files);
}

}  // namespace
}  // namespace ignis::model::test
