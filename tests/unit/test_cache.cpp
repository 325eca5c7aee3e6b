// The result cache: entry codec (no edits, checksum, strict decoding), reading only regular
// files, write failures, the size cap.
#include "cli/cache.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ll {
namespace {

namespace fs = std::filesystem;

const std::string kKey(64, 'a');
// Sources the cache keeps (smaller files are not cached).
std::string source(const std::string& text) { return text + std::string(kMinCachedBytes, '#') + "\n"; }

FileResult sample_result() {
  FileResult r;
  r.path = "src/train.py";
  Finding f;
  f.rule = "LL102";
  f.severity = Severity::Error;
  f.path = r.path;
  f.range = {24, 9, 24, 27, 400, 418};
  f.message = "`epoch_loss` accumulates `loss`";
  f.notes.push_back({{20, 5, 20, 9, 300, 304}, "assigned here"});
  Fix fix;
  fix.title = "Accumulate a Python number with `.item()`";
  fix.safe = false;
  fix.edits.push_back({410, 414, "loss.item()  # edit text"});
  f.fixes.push_back(fix);
  f.memory_claim = true;
  r.findings.push_back(f);
  Finding g;
  g.rule = "LL303";
  g.severity = Severity::Note;
  g.range = {30, 1, 30, 10, 500, 509};
  g.message = "suppressed one";
  g.suppressed = true;
  g.suppression = "# noqa: LL303";
  g.low_confidence = true;
  r.findings.push_back(g);
  Diagnostic d;
  d.kind = "syntax-error";
  d.message = "unexpected token";
  d.line = 3;
  d.col = 7;
  r.diagnostics.push_back(d);
  return r;
}

FileSummary sample_summary() {
  FileSummary s;
  s.module = "src.train";
  s.path = "src/train.py";
  s.dataset_uses = {"data.Images"};
  s.imported_calls = {{"utils.evaluate", true, ""}, {"utils.log", false, "train"}};
  s.classes = {"Images"};
  s.functions = {"train", "evaluate"};
  s.caller_off = {"evaluate"};
  s.imports_torch = true;
  s.tensor_api = true;
  s.imports = {"torch", "pkg.data"};
  s.star_modules = {"pkg.helpers"};
  s.wrapping_functions = {"wrap_ddp"};
  s.grad_off_forwards = {"Sampler"};
  s.type_refs = {"model.Transformer"};
  s.sharding_datasets = {"StreamingDataset"};
  s.synthetic_datasets = {"RandomImages"};
  s.linear_classes = {"LogisticRegression"};
  s.module_classes = {"LogisticRegression", "Net"};
  s.communicating_classes = {"ParallelMLP"};
  s.distributed_feeds = {{"data.build_loaders", 0, {"#0", "cfg"}}, {"data.loader", -1, {}}};
  s.accumulating_methods = {"AverageMeter.update"};
  s.backprop_methods = {"GradCAM.heatmap"};
  s.history_methods = {"Net.train_step"};
  s.helper_methods = {{"trainer.eval", "model", true, -1}, {"inference", "net", false, 1}};
  s.loop_method_calls = {{"agent.Agent", false, {"act", "reset", "update"}, {"saved_log_probs"}}};
  s.keeping_methods = {"Agent.update"};
  s.eval_leaving = {{"evaluate", 0, "model"}};
  s.freezing = {{"set_parameter_requires_grad", 0, "model", 1, "feature_extracting"},
                {"set_requires_grad", 0, "nets", 1, "requires_grad", 2}};
  s.program = true;
  s.method_calls = {{"generate", true}, {"append", false}};
  s.open_methods = {"infer"};
  s.referenced = {"evaluate", "getattr", "model"};
  s.imported_refs = {"train_test.train"};
  s.backprop_results = {"sample"};
  s.eval_named = {"predict", "sample"};
  s.self_reads = {"Worker.evaluate"};
  s.holding = {{"sample", 120, 480, true}, {"evaluate", 500, 600, false, "Worker", true}};
  s.defined_classes = {"Worker", "Evaluator"};
  s.own_reads = {{"", "sample"}, {"train", "evaluate"}};
  s.dispatched_modules = {"lib", "*"};
  s.model_sizes = {{"Net", 266610}};
  s.trainers = {"train_one"};
  s.self_calls = {{"Agent", "eval_step", true}};
  s.method_calls_from_namesakes = {{"eval_step", false}};
  s.class_bases = {{"Gen", "base.Agent"}};
  s.loss_functions = {{"calc_dataset_loss", true}, {"get_loss", false}};
  return s;
}

FileResult no_fix_result() {
  FileResult r = sample_result();
  for (auto& f : r.findings) f.fixes.clear();
  return r;
}

TEST(CacheCodec, Sha256IsTheStandardDigest) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(CacheCodec, RoundTripKeepsEverythingButEdits) {
  const FileResult r = sample_result();
  const std::string entry = encode_entry(kKey, r, sample_summary());
  FileResult out;
  out.path = r.path;
  FileSummary s;
  ASSERT_TRUE(decode_entry(entry, kKey, false, out, s));
  ASSERT_EQ(out.findings.size(), 2u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.rule, "LL102");
  EXPECT_EQ(f.severity, Severity::Error);
  EXPECT_EQ(f.path, r.path);
  EXPECT_EQ(f.range.line, 24u);
  EXPECT_EQ(f.range.end, 418u);
  EXPECT_EQ(f.message, r.findings[0].message);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_EQ(f.notes[0].message, "assigned here");
  ASSERT_EQ(f.fixes.size(), 1u);
  EXPECT_EQ(f.fixes[0].title, r.findings[0].fixes[0].title);
  EXPECT_FALSE(f.fixes[0].safe);
  EXPECT_TRUE(f.fixes[0].edits.empty()) << "edits never come from the cache";
  EXPECT_TRUE(f.memory_claim);
  const Finding& g = out.findings[1];
  EXPECT_FALSE(g.memory_claim);
  EXPECT_TRUE(g.suppressed);
  EXPECT_EQ(g.suppression, "# noqa: LL303");
  EXPECT_TRUE(g.low_confidence);
  ASSERT_EQ(out.diagnostics.size(), 1u);
  EXPECT_EQ(out.diagnostics[0].kind, "syntax-error");
  EXPECT_EQ(out.diagnostics[0].col, 7u);
  EXPECT_EQ(s.module, "src.train");
  EXPECT_EQ(s.path, "src/train.py");
  EXPECT_EQ(s.imported_calls, sample_summary().imported_calls);
  EXPECT_EQ(s.caller_off, std::vector<std::string>{"evaluate"});
  EXPECT_TRUE(s.imports_torch);
  EXPECT_TRUE(s.tensor_api);
  EXPECT_EQ(s.imports, sample_summary().imports);
  EXPECT_EQ(s.star_modules, sample_summary().star_modules);
  EXPECT_EQ(s.wrapping_functions, sample_summary().wrapping_functions);
  EXPECT_EQ(s.grad_off_forwards, sample_summary().grad_off_forwards);
  EXPECT_EQ(s.type_refs, sample_summary().type_refs);
  EXPECT_EQ(s.sharding_datasets, sample_summary().sharding_datasets);
  EXPECT_EQ(s.synthetic_datasets, sample_summary().synthetic_datasets);
  EXPECT_EQ(s.linear_classes, sample_summary().linear_classes);
  EXPECT_EQ(s.module_classes, sample_summary().module_classes);
  EXPECT_EQ(s.communicating_classes, sample_summary().communicating_classes);
  EXPECT_EQ(s.distributed_feeds, sample_summary().distributed_feeds);
  EXPECT_EQ(s.accumulating_methods, sample_summary().accumulating_methods);
  EXPECT_EQ(s.backprop_methods, sample_summary().backprop_methods);
  EXPECT_EQ(s.history_methods, sample_summary().history_methods);
  ASSERT_EQ(s.helper_methods.size(), 2u);
  EXPECT_EQ(s.helper_methods[0].param, -1);
  EXPECT_EQ(s.helper_methods[1].method, "inference");
  EXPECT_EQ(s.helper_methods[1].param, 1);
  EXPECT_EQ(s.helper_methods[0].method, "trainer.eval");
  EXPECT_EQ(s.helper_methods[0].model, "model");
  EXPECT_TRUE(s.helper_methods[0].evaluates);
  ASSERT_EQ(s.loop_method_calls.size(), 1u);
  EXPECT_EQ(s.loop_method_calls[0].cls, "agent.Agent");
  EXPECT_FALSE(s.loop_method_calls[0].batch_loop);
  EXPECT_EQ(s.loop_method_calls[0].methods, (std::vector<std::string>{"act", "reset", "update"}));
  EXPECT_EQ(s.loop_method_calls[0].attrs, (std::vector<std::string>{"saved_log_probs"}));
  EXPECT_EQ(s.keeping_methods, sample_summary().keeping_methods);
  ASSERT_EQ(s.eval_leaving.size(), 1u);
  EXPECT_EQ(s.eval_leaving[0].function, "evaluate");
  EXPECT_EQ(s.eval_leaving[0].index, 0);
  EXPECT_EQ(s.eval_leaving[0].param, "model");
  ASSERT_EQ(s.freezing.size(), 2u);
  EXPECT_EQ(s.freezing[0].value, 0);
  EXPECT_EQ(s.freezing[1].value, 2);
  EXPECT_EQ(s.freezing[1].flag_param, "requires_grad");
  EXPECT_EQ(s.freezing[0].function, "set_parameter_requires_grad");
  EXPECT_EQ(s.freezing[0].index, 0);
  EXPECT_EQ(s.freezing[0].flag, 1);
  EXPECT_EQ(s.freezing[0].flag_param, "feature_extracting");
  EXPECT_TRUE(s.program);
  EXPECT_FALSE(s.gpu_evidence);
  EXPECT_EQ(s.method_calls, sample_summary().method_calls);
  EXPECT_EQ(s.open_methods, sample_summary().open_methods);
  EXPECT_EQ(s.referenced, sample_summary().referenced);
  EXPECT_EQ(s.imported_refs, sample_summary().imported_refs);
  EXPECT_EQ(s.backprop_results, sample_summary().backprop_results);
  EXPECT_EQ(s.eval_named, sample_summary().eval_named);
  EXPECT_EQ(s.self_reads, sample_summary().self_reads);
  ASSERT_EQ(s.holding.size(), 2u);
  EXPECT_EQ(s.holding[1].cls, "Worker");
  EXPECT_TRUE(s.holding[1].imported_base);
  EXPECT_FALSE(s.holding[0].imported_base);
  EXPECT_EQ(s.defined_classes, sample_summary().defined_classes);
  EXPECT_EQ(s.holding[0].name, "sample");
  EXPECT_EQ(s.holding[0].begin, 120u);
  EXPECT_EQ(s.holding[0].end, 480u);
  EXPECT_TRUE(s.holding[0].interface);
  EXPECT_EQ(s.own_reads, sample_summary().own_reads);
  EXPECT_EQ(s.dispatched_modules, sample_summary().dispatched_modules);
  EXPECT_EQ(s.model_sizes, sample_summary().model_sizes);
  EXPECT_EQ(s.trainers, sample_summary().trainers);
  EXPECT_EQ(s.self_calls, sample_summary().self_calls);
  EXPECT_EQ(s.method_calls_from_namesakes, sample_summary().method_calls_from_namesakes);
  EXPECT_EQ(s.class_bases, sample_summary().class_bases);
  EXPECT_EQ(s.loss_functions, sample_summary().loss_functions);
}

TEST(CacheCodec, EntryHoldsNoEditText) {
  const std::string entry = encode_entry(kKey, sample_result(), sample_summary());
  EXPECT_EQ(entry.find("# edit text"), std::string::npos);
}

TEST(CacheCodec, AnEntryWithAFixIsAMissWhenEditsAreNeeded) {
  FileResult out;
  FileSummary s;
  EXPECT_FALSE(decode_entry(encode_entry(kKey, sample_result(), sample_summary()), kKey, true, out, s));
  EXPECT_TRUE(decode_entry(encode_entry(kKey, no_fix_result(), sample_summary()), kKey, true, out, s));
}

TEST(CacheCodec, EveryFlippedBitIsDetected) {
  FileResult small;
  Finding f;
  f.rule = "LL101";
  f.range = {7, 21, 7, 29, 90, 98};
  f.message = "m";
  small.findings.push_back(f);
  const std::string entry = encode_entry(kKey, small, FileSummary{});
  FileResult out;
  FileSummary s;
  ASSERT_TRUE(decode_entry(entry, kKey, false, out, s));
  for (size_t i = 0; i < entry.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = entry;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      EXPECT_FALSE(decode_entry(bad, kKey, false, out, s)) << "byte " << i << " bit " << bit;
    }
}

TEST(CacheCodec, WrongKeyTruncationAndTrailingBytesAreMisses) {
  const std::string entry = encode_entry(kKey, no_fix_result(), sample_summary());
  FileResult out;
  FileSummary s;
  EXPECT_FALSE(decode_entry(entry, std::string(64, 'b'), false, out, s));
  EXPECT_FALSE(decode_entry(entry, "not-a-key", false, out, s));
  for (size_t n : {size_t{0}, size_t{10}, entry.size() / 2, entry.size() - 1})
    EXPECT_FALSE(decode_entry(entry.substr(0, n), kKey, false, out, s)) << n;
  EXPECT_FALSE(decode_entry(entry + "x", kKey, false, out, s));
  EXPECT_FALSE(decode_entry(entry + "\n", kKey, false, out, s));
}

TEST(CacheCodec, PayloadDecoderIsStrict) {
  const std::string ok = R"({"f":[{"r":"LL101","s":1,"g":[1,2,1,3,4,5],"m":"x"}],"d":[],)"
                         R"("p":{"mod":"m","pth":"m.py","du":[],"cl":[],"fn":[],"co":[],"tor":true,"tap":false,"im":["torch"],"ic":[["a.b",true,""]],)"
                         R"("wf":[],"gof":["Sampler"],"tr":["m.T"],"shd":["S"],"syn":[],"lin":["LogisticRegression"],"mcl":["Net"],"dfe":["MixNet.2"],"mfc":["TinyLM|norms.RMSNorm"],"ccl":["ParallelMLP"],"acc":["AverageMeter.update"],"bpm":["GradCAM.heatmap"],"hsm":["Net.train_step"],"sm":["p.q"],"df":[["c.d",-1,["#0","args"]]],"evl":[["evaluate",0,"model"]],"frz":[["freeze",1,"net",-1,"",0]],"pg":true,"ge":false,"om":["generate"],"nom":[],"mc":[["infer",true]],"ref":["evaluate"],"srd":["Worker.evaluate"],"irf":["m.f"],"bpr":["sample"],"evn":["predict"],"hf":[["sample",10,20,false,"Worker",true]],"owr":[["","sample"]],"dsm":["lib"],"slc":[["Agent","eval_step",true]],"mcn":[["eval_step",false]],"cbs":[["Gen","base.Agent"]],"trn":["fit"],"dcl":["Worker"],"msz":[["Net",100]],"lf":[["get_loss",true]],"hm":[["trainer.eval","model",true,-1]],"lmc":[["a.Agent",true,["reset","update"],["losses"]]],"kpm":["Agent.update"],"hkm":["GradCAM.__init__"],"opf":[["build_optimizer",2]],"bsl":["compute_loss"],"p2p":["pipeline_communicate"]}})";
  FileResult out;
  FileSummary s;
  ASSERT_TRUE(decode_payload(ok, false, out, s));
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string p = ok;
    size_t at = p.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    p.replace(at, from.size(), to);
    FileResult o;
    FileSummary ss;
    return !decode_payload(p, false, o, ss);
  };
  EXPECT_TRUE(bad("[\"sample\",10,20,false,\"Worker\",true]", "[\"sample\",10,20,false,\"Worker\"]"));
  EXPECT_TRUE(bad("[\"sample\",10,20,false,\"Worker\",true]", "[\"sample\",10,20,false,1,true]"));
  EXPECT_TRUE(bad("\"srd\":[\"Worker.evaluate\"]", "\"srd\":[\"evaluate\"]"));
  EXPECT_TRUE(bad("\"srd\":[\"Worker.evaluate\"],", ""));
  EXPECT_TRUE(bad("\"hsm\":[\"Net.train_step\"]", "\"hsm\":[\"train_step\"]"));
  EXPECT_TRUE(bad("[\"\",\"sample\"]", "[\"sample\"]"));
  EXPECT_TRUE(bad("[\"Agent\",\"eval_step\",true]", "[\"Agent\",\"eval_step\"]"));
  EXPECT_TRUE(bad("[\"Agent\",\"eval_step\",true]", "[\"Agent\",\"eval_step\",1]"));
  EXPECT_TRUE(bad("[\"Gen\",\"base.Agent\"]", "[\"Gen\"]"));
  EXPECT_TRUE(bad("[\"Net\",100]", "[\"Net\",-1]"));
  EXPECT_TRUE(bad("[\"freeze\",1,\"net\",-1,\"\",0]", "[\"freeze\",-1,\"net\",-1,\"\",0]"));
  EXPECT_TRUE(bad("[\"freeze\",1,\"net\",-1,\"\",0]", "[\"freeze\",1,\"net\",-2,\"\",0]"));
  EXPECT_TRUE(bad("[\"freeze\",1,\"net\",-1,\"\",0]", "[\"freeze\",1,\"net\"]"));
  EXPECT_TRUE(bad("\"frz\":[[\"freeze\",1,\"net\",-1,\"\",0]],", ""));
  // A freeze's value form: 0, 1 or 2, and only with a flag.
  EXPECT_TRUE(bad("[\"freeze\",1,\"net\",-1,\"\",0]", "[\"freeze\",1,\"net\",-1,\"\"]"));
  EXPECT_TRUE(bad("[\"freeze\",1,\"net\",-1,\"\",0]", "[\"freeze\",1,\"net\",-1,\"\",3]"));
  EXPECT_TRUE(bad("[\"freeze\",1,\"net\",-1,\"\",0]", "[\"freeze\",1,\"net\",-1,\"\",1]"));
  EXPECT_TRUE(bad("[\"Net\",100]", "[\"Net\",\"100\"]"));
  EXPECT_TRUE(bad("\"trn\":[\"fit\"]", "\"trn\":[1]"));
  EXPECT_TRUE(bad("\"dcl\":[\"Worker\"]", "\"dcl\":[2]"));
  EXPECT_TRUE(bad("\"Worker\",true]]", "\"Worker\"]]"));
  EXPECT_TRUE(bad("\"lin\":[\"LogisticRegression\"]", "\"lin\":[2]"));
  EXPECT_TRUE(bad("[\"get_loss\",true]", "[\"get_loss\"]"));
  EXPECT_TRUE(bad("[\"trainer.eval\",\"model\",true,-1]", "[\"trainer.eval\",\"model\",true]"));
  EXPECT_TRUE(bad("[\"trainer.eval\",\"model\",true,-1]", "[\"trainer.eval\",\"model\",1,-1]"));
  EXPECT_TRUE(bad("[\"trainer.eval\",\"model\",true,-1]", "[\"trainer.eval\",\"model\",true,-2]"));
  EXPECT_TRUE(bad("[\"trainer.eval\",\"model\",true,-1]", "[\"trainer.eval\",\"model\",true,1.5]"));
  EXPECT_TRUE(bad("[\"a.Agent\",true,[\"reset\",\"update\"],[\"losses\"]]", "[\"a.Agent\",true,[1],[]]"));
  EXPECT_TRUE(bad("[\"a.Agent\",true,[\"reset\",\"update\"],[\"losses\"]]", "[\"a.Agent\",true,[\"reset\"]]"));
  EXPECT_TRUE(bad("[\"a.Agent\",true,[\"reset\",\"update\"],[\"losses\"]]", "[\"Agent\",true,[],[]]"));
  // A class-qualified name without its class, or a helper without its model: a forged entry the
  // join could not split.
  EXPECT_TRUE(bad("[\"trainer.eval\",\"model\",true,-1]", "[\"eval\",\"model\",true,-1]"));
  EXPECT_TRUE(bad("[\"trainer.eval\",\"model\",true,-1]", "[\"trainer.eval\",\"\",true,-1]"));
  EXPECT_TRUE(bad("\"acc\":[\"AverageMeter.update\"]", "\"acc\":[\"update\"]"));
  EXPECT_TRUE(bad("\"kpm\":[\"Agent.update\"]", "\"kpm\":[3]"));
  EXPECT_TRUE(bad("\"hkm\":[\"GradCAM.__init__\"]", "\"hkm\":[3]"));
  EXPECT_TRUE(bad("\"irf\":[\"m.f\"]", "\"irf\":[true]"));
  EXPECT_TRUE(bad("[\"build_optimizer\",2]", "[\"build_optimizer\",7]"));
  EXPECT_TRUE(bad("[\"build_optimizer\",2]", "[\"build_optimizer\"]"));
  EXPECT_TRUE(bad("\"bsl\":[\"compute_loss\"]", "\"bsl\":[1]"));
  EXPECT_TRUE(bad("\"bpm\":[\"GradCAM.heatmap\"]", "\"bpm\":[1]"));
  EXPECT_TRUE(bad("\"bpm\":[\"GradCAM.heatmap\"],", ""));
  EXPECT_TRUE(bad("\"p2p\":[\"pipeline_communicate\"]", "\"p2p\":{}"));
  // An imported call: callee, mode, and the function deciding it (a string, and present).
  EXPECT_TRUE(bad("[\"a.b\",true,\"\"]", "[\"a.b\",true]"));
  EXPECT_TRUE(bad("[\"a.b\",true,\"\"]", "[\"a.b\",true,1]"));
  // A feed's passed arguments: a list of strings, and present.
  EXPECT_TRUE(bad("[\"c.d\",-1,[\"#0\",\"args\"]]", "[\"c.d\",-1,[0]]"));
  EXPECT_TRUE(bad("[\"c.d\",-1,[\"#0\",\"args\"]]", "[\"c.d\",-1]"));
  // A forward's element without history: "Class.k", k a small index.
  EXPECT_TRUE(bad("\"dfe\":[\"MixNet.2\"]", "\"dfe\":[\"MixNet\"]"));
  EXPECT_TRUE(bad("\"dfe\":[\"MixNet.2\"]", "\"dfe\":[\"MixNet.x\"]"));
  EXPECT_TRUE(bad("\"dfe\":[\"MixNet.2\"]", "\"dfe\":[\"MixNet.\"]"));
  EXPECT_TRUE(bad("\"dfe\":[\"MixNet.2\"]", "\"dfe\":[\"MixNet.1234567\"]"));
  EXPECT_TRUE(bad("\"dfe\":[\"MixNet.2\"]", "\"dfe\":[2]"));
  EXPECT_TRUE(bad("\"mfc\":[\"TinyLM|norms.RMSNorm\"]", "\"mfc\":[3]"));
  EXPECT_TRUE(bad("\"mfc\":[\"TinyLM|norms.RMSNorm\"],", ""));
  EXPECT_TRUE(bad("[\"get_loss\",true]", "[\"get_loss\",1]"));
  EXPECT_TRUE(bad("[1,2,", "[-1,2,"));
  EXPECT_TRUE(bad("[1,2,", "[1e300,2,"));
  EXPECT_TRUE(bad("[1,2,", "[1.5,2,"));
  EXPECT_TRUE(bad("[1,2,", "[4294967296,2,"));
  EXPECT_TRUE(bad("4,5]", "5,4]"));  // end before begin
  EXPECT_TRUE(bad("3,4,5]", "3,4]"));
  EXPECT_TRUE(bad("\"s\":1", "\"s\":3"));
  EXPECT_TRUE(bad("\"s\":1", "\"s\":\"1\""));
  EXPECT_TRUE(bad("\"r\":\"LL101\"", "\"r\":101"));
  EXPECT_TRUE(bad("[\"a.b\",true,", "[\"a.b\",1,"));
  EXPECT_TRUE(bad("[\"a.b\",true,\"\"]", "[\"a.b\"]"));
  EXPECT_TRUE(bad("\"mod\":\"m\"", "\"mod\":null"));
  EXPECT_TRUE(bad("\"tor\":true,", ""));
  EXPECT_TRUE(bad("\"im\":[\"torch\"]", "\"im\":[1]"));
  EXPECT_TRUE(bad("\"d\":[]", "\"d\":{}"));
  EXPECT_TRUE(bad("[\"c.d\",-1,", "[\"c.d\",-2,"));
  EXPECT_TRUE(bad("[\"c.d\",-1,", "[\"c.d\",1e9,"));
  EXPECT_TRUE(bad("[\"c.d\",-1,", "[\"c.d\",\"0\","));
  EXPECT_TRUE(bad("\"sm\":[\"p.q\"]", "\"sm\":[1]"));
  EXPECT_TRUE(bad("\"wf\":[],", ""));
  EXPECT_TRUE(bad(",\"ge\":false", ""));          // the project-level impact facts are required
  EXPECT_TRUE(bad("\"pg\":true", "\"pg\":1"));
  EXPECT_TRUE(bad("[\"infer\",true]", "[\"infer\"]"));
  EXPECT_TRUE(bad(",\"om\":[\"generate\"]", ""));
  EXPECT_TRUE(bad(",\"ref\":[\"evaluate\"]", ""));  // what the run's files read decides dead code
  EXPECT_TRUE(bad("[\"sample\",10,20,", "[\"sample\",20,10,"));
  EXPECT_TRUE(bad("[\"sample\",10,20,", "[\"sample\",-1,20,"));
  EXPECT_TRUE(bad("[\"sample\",10,20,false,\"Worker\",true]", "[\"sample\",10,false,\"Worker\",true]"));
  EXPECT_TRUE(bad("\"m\":\"x\"}", "\"m\":\"x\",\"u\":1}"));
  EXPECT_TRUE(bad("{\"f\"", "[{\"f\""));
  FileResult o;
  EXPECT_FALSE(decode_payload(std::string(100000, '['), false, o, s));
  EXPECT_FALSE(decode_payload("", false, o, s));
}

class CacheDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "leaklint-cache-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string entry_path(const ResultCache& c, const std::string& key) const {
    return c.entries_dir() + "/" + key.substr(0, 2) + "/" + key;
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(root_))
      if (!e.is_directory()) out.push_back(e.path());
    return out;
  }
  uint64_t usage() const {
    uint64_t total = 0;
    for (const auto& p : files()) {
      struct stat st;
      if (::lstat(p.c_str(), &st) == 0)
        total += std::max<uint64_t>(static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_blocks) * 512);
    }
    return total;
  }
  std::string root_;
};

TEST_F(CacheDir, StoreThenLoad) {
  ResultCache c(root_);
  ASSERT_TRUE(c.enabled());
  Config cfg;
  const std::string key = c.key("a.py", source("import torch\n"), cfg);
  ASSERT_EQ(key.size(), 64u);
  EXPECT_EQ(key, c.key("a.py", source("import torch\n"), cfg));
  EXPECT_NE(key, c.key("b.py", source("import torch\n"), cfg));
  EXPECT_NE(key, c.key("a.py", source("import torch\n\n"), cfg));
  Config other;
  other.ignore = {"LL101"};
  EXPECT_NE(key, c.key("a.py", source("import torch\n"), other));
  EXPECT_EQ(c.key("a.py", "import torch\n", cfg), "") << "small files are not cached";
  FileResult out;
  out.path = "a.py";
  FileSummary s;
  EXPECT_FALSE(c.load(key, out, s));
  c.store(key, sample_result(), sample_summary());
  ASSERT_TRUE(c.load(key, out, s));
  EXPECT_EQ(out.findings.size(), 2u);
  EXPECT_TRUE(out.findings[0].fixes[0].edits.empty());
  ResultCache fixing(root_, /*edits_needed=*/true);
  EXPECT_FALSE(fixing.load(key, out, s));
  for (const auto& p : files()) EXPECT_EQ(p.extension(), "") << p;  // no temporary file left
}

TEST_F(CacheDir, NonRegularEntriesAreMissesAndDoNotBlock) {
  ResultCache c(root_);
  ASSERT_TRUE(c.enabled());
  Config cfg;
  const std::string a = c.key("a.py", source("1"), cfg), b = c.key("b.py", source("2"), cfg),
                    l = c.key("l.py", source("3"), cfg);
  c.store(a, no_fix_result(), sample_summary());
  c.store(b, no_fix_result(), sample_summary());
  c.store(l, no_fix_result(), sample_summary());
  fs::remove(entry_path(c, a));
  fs::create_directory(entry_path(c, a));
  fs::remove(entry_path(c, b));
  ASSERT_EQ(::mkfifo(entry_path(c, b).c_str(), 0644), 0);
  const std::string target = root_ + "/target";
  fs::rename(entry_path(c, l), target);
  fs::create_symlink(target, entry_path(c, l));
  FileResult out;
  FileSummary s;
  EXPECT_FALSE(c.load(a, out, s));
  // A FIFO with no writer: a blocking open would never return (the test would then fail on
  // its CTest timeout); no clock is read here, so a loaded machine cannot fail it.
  EXPECT_FALSE(c.load(b, out, s));
  EXPECT_FALSE(c.load(l, out, s));  // symlinks are not followed
  // A new store replaces the FIFO; the directory stays in the way and nothing is stored.
  c.store(b, no_fix_result(), sample_summary());
  EXPECT_TRUE(c.load(b, out, s));
  c.store(a, no_fix_result(), sample_summary());
  EXPECT_FALSE(c.load(a, out, s));
  EXPECT_TRUE(fs::is_directory(entry_path(c, a)));
}

TEST_F(CacheDir, FailedWritesCommitNothing) {
  // In a child: a 64-byte file size limit makes every entry write fail with EFBIG.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_DFL);  // the cache itself must ignore it
    struct rlimit rl = {64, 64};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    ResultCache c(root_);
    Config cfg;
    for (int i = 0; i < 10; ++i) c.store(c.key("f" + std::to_string(i) + ".py", source("x"), cfg), sample_result(), sample_summary());
    FileResult out;
    FileSummary s;
    bool any = false;
    for (int i = 0; i < 10; ++i) any |= c.load(c.key("f" + std::to_string(i) + ".py", source("x"), cfg), out, s);
    ::_exit(any ? 3 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(files().empty()) << files().front();
}

TEST_F(CacheDir, SizeCapEvictsTheOldestEntries) {
  std::vector<std::string> keys;
  {
    ResultCache c(root_);
    c.set_max_bytes(256 << 10);
    Config cfg;
    FileResult big = no_fix_result();
    big.findings[0].message.assign(3000, 'm');
    for (int i = 0; i < 200; ++i) {
      keys.push_back(c.key("m" + std::to_string(i) + ".py", source("x"), cfg));
      c.store(keys.back(), big, sample_summary());
      // Each entry one second newer than the one before: the file system's timestamps are
      // coarser than 200 stores, and entries of one tick are evicted in name order.
      struct timespec when[2] = {{1000000 + i, 0}, {1000000 + i, 0}};
      ASSERT_EQ(::utimensat(AT_FDCWD, entry_path(c, keys.back()).c_str(), when, 0), 0);
    }
    EXPECT_GT(usage(), uint64_t{256} << 10);
  }  // the cap is enforced once, at the end of the run
  EXPECT_LE(usage(), uint64_t{256} << 10);
  ResultCache c(root_);
  FileResult out;
  FileSummary s;
  EXPECT_FALSE(c.load(keys.front(), out, s));
  EXPECT_TRUE(c.load(keys.back(), out, s));
}

TEST_F(CacheDir, EntriesOfTheFirstLayoutAreRemoved) {
  const std::string v1 = root_ + "/ab/ab" + std::string(30, '1') + ".json";
  const std::string v1_alone = root_ + "/cd/cd" + std::string(30, '2') + ".json";
  const std::string other = root_ + "/ab/notes.txt";
  fs::create_directories(root_ + "/ab");
  fs::create_directories(root_ + "/cd");
  for (const auto& p : {v1, v1_alone, other}) std::ofstream(p) << "{}";
  {
    ResultCache c(root_);
    Config cfg;
    c.store(c.key("a.py", source("x"), cfg), no_fix_result(), sample_summary());
  }
  EXPECT_FALSE(fs::exists(v1));
  EXPECT_FALSE(fs::exists(root_ + "/cd"));
  EXPECT_TRUE(fs::exists(other));
}

TEST_F(CacheDir, CapComesFromTheEnvironment) {
  ::setenv("LEAKLINT_RESULT_CACHE_MAX_MB", "3", 1);
  EXPECT_EQ(ResultCache(root_).max_bytes(), uint64_t{3} << 20);
  ::setenv("LEAKLINT_RESULT_CACHE_MAX_MB", "junk", 1);
  EXPECT_EQ(ResultCache(root_).max_bytes(), uint64_t{256} << 20);
  ::unsetenv("LEAKLINT_RESULT_CACHE_MAX_MB");
  EXPECT_EQ(ResultCache(root_).max_bytes(), uint64_t{256} << 20);
}

}  // namespace
}  // namespace ll
