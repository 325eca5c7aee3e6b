// Clang AST -> ll::Module. The shapes produced here are the ones the checks already read
// for Python (docs/cpp.md has the full table):
//   torch::NoGradGuard g;            -> with torch.no_grad() as g: <rest of the block>
//   c10::InferenceMode g(flag);      -> with torch.inference_mode(flag) as g: ...
//   torch::AutoGradMode g(false);    -> with torch.set_grad_enabled(False) as g: ...
//   module->forward(x) / module(x)   -> module.forward(x) / module(x)
//   torch::optim::SGD opt(...)       -> opt = torch.optim.SGD(...)
//   total += loss; v.push_back(x)    -> AugAssign; v.append(x)
//   make_data_loader(ds, DataLoaderOptions().workers(12)) -> torch.utils.data.DataLoader(ds, num_workers=12)
//   c10::cuda::CUDACachingAllocator::emptyCache() -> torch.cuda.empty_cache(); fork() -> os.fork()
//   classes deriving torch::nn::Module -> ClassDef with base torch.nn.Module; methods take `self`
//   parameters/fields of module/optimizer type -> an AnnAssign binding `p = <Type>()` first in
//   the function (constructor) body, so the checks know what the name holds.
#include "frontend/cpp/ast_lowering.hpp"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/PrettyPrinter.h>
#include <clang/AST/Stmt.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Basic/OperatorKinds.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Lex/Lexer.h>
#include <llvm/Support/raw_ostream.h>

#include <unordered_map>

#include "frontend/cpp/model_builder.hpp"

namespace ll::cpp {
namespace {

using namespace clang;
// clang's, not the model's (which are spelled ll::Stmt / ll::Expr here).
using clang::Expr;
using clang::Stmt;

bool interesting(ValueKind k) {
  return k == ValueKind::Module || k == ValueKind::Optimizer || k == ValueKind::Scheduler ||
         k == ValueKind::JitMethod;
}

struct TypeInfo {
  ValueKind kind = ValueKind::None;
  bool smart = false;      // held through std::shared_ptr / unique_ptr
  std::string qname;       // model spelling of a library class
  std::string local_class; // or the name of a class of this file
  std::string record_name; // C++ qualified name of the class
  GuardKind guard = GuardKind::None;
  bool holder = false;     // torch::nn::ModuleHolder
};

class AstLowerer {
 public:
  AstLowerer(ASTContext& ctx, std::string_view src, Module& m, std::vector<Diagnostic>& diags)
      : ctx_(ctx), sm_(ctx.getSourceManager()), b_(m, src), diags_(diags), policy_(ctx.getPrintingPolicy()) {
    main_ = sm_.getMainFileID();
    policy_.SuppressInlineNamespace = true;
    policy_.SuppressUnwrittenScope = true;
    policy_.SuppressTemplateArgsInCXXConstructors = true;
  }

  void run() {
    b_.m.lang = Lang::Cpp;
    std::vector<Id> body;
    // noload_decls(): the declarations parsed from this file, without deserialising the
    // whole precompiled LibTorch (decls() would load every top-level declaration of it).
    for (Decl* d : ctx_.getTranslationUnitDecl()->noload_decls()) top_decl(d, body);
    b_.m.body = std::move(body);
  }

 private:
  ASTContext& ctx_;
  SourceManager& sm_;
  ModelBuilder b_;
  std::vector<Diagnostic>& diags_;
  PrintingPolicy policy_;
  FileID main_;
  Id cur_func_ = kNone;
  Id cur_class_ = kNone;
  int depth_ = 0;
  bool too_deep_ = false;
  std::vector<Id> hoisted_;  // lambda FunctionDefs, emitted before the statement that made them
  std::unordered_map<const CXXRecordDecl*, Id> class_ids_;
  int lambda_counter_ = 0;

  // ------------------------------------------------------------------ locations
  bool main_offset(SourceLocation loc, uint32_t& off) const {
    if (loc.isInvalid()) return false;
    auto [fid, o] = sm_.getDecomposedLoc(loc);
    if (fid != main_) return false;
    off = o;
    return true;
  }
  SourceLocation file_begin(SourceLocation loc) const { return loc.isValid() ? sm_.getFileLoc(loc) : loc; }
  SourceLocation file_end(SourceLocation loc) const {
    int guard = 0;
    while (loc.isValid() && !loc.isFileID() && guard++ < 64) {
      if (sm_.isMacroArgExpansion(loc)) loc = sm_.getImmediateSpellingLoc(loc);
      else loc = sm_.getImmediateExpansionRange(loc).getEnd();
    }
    return loc;
  }
  bool in_main(SourceLocation loc) const {
    uint32_t o;
    return main_offset(file_begin(loc), o);
  }
  bool offsets(SourceRange sr, uint32_t& b, uint32_t& e) const {
    SourceLocation B = file_begin(sr.getBegin());
    SourceLocation E = file_end(sr.getEnd());
    if (!main_offset(B, b)) return false;
    SourceLocation after = Lexer::getLocForEndOfToken(E, 0, sm_, ctx_.getLangOpts());
    if (!main_offset(after.isValid() ? after : E, e)) e = b;
    if (e < b) e = b;
    return true;
  }
  Range rng(SourceRange sr, const Range* fallback = nullptr) const {
    uint32_t b = 0, e = 0;
    if (offsets(sr, b, e)) return b_.range(b, e);
    return fallback ? *fallback : b_.range(0, 0);
  }
  Range rng(const Stmt* s) const { return rng(s->getSourceRange(), &cur_range_); }
  Range rng(const Decl* d) const { return rng(d->getSourceRange(), &cur_range_); }
  // A statement's range, with its terminating `;` when one follows.
  Range stmt_rng(const Stmt* s) const {
    Range r = rng(s);
    uint32_t e = r.end;
    std::string_view src = b_.src;
    while (e < src.size() && (src[e] == ' ' || src[e] == '\t' || src[e] == '\n' || src[e] == '\r')) ++e;
    if (e < src.size() && src[e] == ';') return b_.range(r.begin, e + 1);
    return r;
  }
  Range cur_range_;  // fallback for nodes whose location is outside the main file

  void too_deep(const Range& r) {
    if (too_deep_) return;
    too_deep_ = true;
    diags_.push_back(b_.too_deep(r));
  }

  // ------------------------------------------------------------------ names and types
  std::string qualified_name(const NamedDecl* d) const {
    std::string s;
    llvm::raw_string_ostream os(s);
    d->printQualifiedName(os, policy_);
    os.flush();
    return s;
  }

  bool is_local_record(const CXXRecordDecl* rd) const {
    if (!rd) return false;
    const CXXRecordDecl* def = rd->getDefinition();
    if (!def) def = rd;
    return !def->isImplicit() && in_main(def->getLocation());
  }

  // Module / optimizer / scheduler through the base classes.
  ValueKind record_kind(const CXXRecordDecl* rd, const CXXRecordDecl** holder_impl, int depth) const {
    if (!rd || depth > 16) return ValueKind::None;
    std::string name = qualified_name(rd);
    if (name == "torch::nn::ModuleHolder") {
      if (holder_impl)
        if (auto* spec = dyn_cast<ClassTemplateSpecializationDecl>(rd))
          if (spec->getTemplateArgs().size() > 0 && spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
            *holder_impl = spec->getTemplateArgs()[0].getAsType()->getAsCXXRecordDecl();
      return ValueKind::Module;
    }
    ValueKind k = value_kind_by_name(name);
    if (k != ValueKind::None) return k;
    const CXXRecordDecl* def = rd->getDefinition();
    if (!def) return ValueKind::None;
    for (const CXXBaseSpecifier& base : def->bases()) {
      const CXXRecordDecl* b = base.getType()->getAsCXXRecordDecl();
      ValueKind bk = record_kind(b, holder_impl, depth + 1);
      if (interesting(bk)) return bk;
    }
    return ValueKind::None;
  }

  // torch::nn::ModuleHolder<...> or a class derived from one (torch::nn::Linear, TORCH_MODULE(Net)).
  bool is_holder(const CXXRecordDecl* rd, int depth) const {
    if (!rd || depth > 16) return false;
    if (qualified_name(rd) == "torch::nn::ModuleHolder") return true;
    const CXXRecordDecl* def = rd->getDefinition();
    if (!def) return false;
    for (const CXXBaseSpecifier& base : def->bases())
      if (is_holder(base.getType()->getAsCXXRecordDecl(), depth + 1)) return true;
    return false;
  }

  TypeInfo classify(QualType t, int depth = 0) const {
    TypeInfo info;
    if (t.isNull() || depth > 4) return info;
    t = t.getNonReferenceType();
    if (t->isPointerType()) t = t->getPointeeType();
    const CXXRecordDecl* rd = t->getAsCXXRecordDecl();
    if (!rd) return info;
    info.record_name = qualified_name(rd);
    info.guard = guard_kind(info.record_name);
    if (info.guard != GuardKind::None) return info;
    ValueKind k = value_kind_by_name(info.record_name);
    if (k == ValueKind::SmartPtr) {
      if (auto* spec = dyn_cast<ClassTemplateSpecializationDecl>(rd))
        if (spec->getTemplateArgs().size() > 0 && spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type) {
          TypeInfo inner = classify(spec->getTemplateArgs()[0].getAsType(), depth + 1);
          inner.smart = true;
          if (inner.kind == ValueKind::None) inner.kind = ValueKind::SmartPtr;
          return inner;
        }
      info.kind = ValueKind::SmartPtr;
      info.smart = true;
      return info;
    }
    if (k == ValueKind::None) k = record_kind(rd, nullptr, 0);
    info.kind = k;
    info.holder = k == ValueKind::Module && is_holder(rd, 0);
    if (interesting(k) && is_local_record(rd)) {
      info.local_class = rd->getNameAsString();
    } else if (k != ValueKind::None) {
      info.qname = class_qname(info.record_name, k);
    }
    return info;
  }

  // A value stored into a variable of arithmetic type is a number, never a tensor carrying
  // history: `total += f(x)` with `float total` reads as `total += float(f(x))`.
  Id numeric(Id v, QualType t) {
    if (v == kNone || t.isNull()) return v;
    t = t.getNonReferenceType();
    if (!t->isArithmeticType() || b_.e(v).kind == ExprKind::Literal) return v;
    const char* w = t->isBooleanType() ? "bool" : t->isFloatingType() ? "float" : "int";
    Range r = b_.e(v).range;
    return b_.call(b_.name(w, r), {v}, r);
  }

  // A class type that is known not to be a LibTorch module, optimizer, tensor, container
  // or pointer (dlib::..., cv::Mat, std::function): parameters and fields of such a type get
  // a binding saying so, so that a name like `classifier` is not taken for a model.
  static bool foreign_record(const TypeInfo& ti) {
    if (ti.kind != ValueKind::None || ti.guard != GuardKind::None || ti.record_name.empty()) return false;
    for (const char* p : {"torch::", "at::", "c10::", "caffe2::"})
      if (ti.record_name.rfind(p, 0) == 0) return false;
    return true;
  }

  // A callee expression that constructs a value of type `t` (`Net(...)`, `torch.nn.Linear(...)`).
  Id type_callee(QualType t, const Range& r) {
    TypeInfo ti = classify(t);
    if (!ti.local_class.empty()) return b_.name(ti.local_class, r);
    const CXXRecordDecl* rd = t.isNull() ? nullptr : t.getNonReferenceType()->getAsCXXRecordDecl();
    if (rd && is_local_record(rd)) return b_.name(rd->getNameAsString(), r);
    if (!ti.qname.empty()) return b_.model_name(ti.qname, r);
    if (rd) return b_.qualified(qualified_name(rd), r);
    std::string spelled = t.isNull() ? std::string("object") : t.getAsString(policy_);
    return b_.qualified(spelled, r);
  }

  // ------------------------------------------------------------------ declarations
  void top_decl(Decl* d, std::vector<Id>& out) {
    if (!d || d->isImplicit()) return;
    // Each `namespace x {` block is its own declaration: only this file's are opened.
    if (auto* ns = dyn_cast<NamespaceDecl>(d)) {
      if (in_main(ns->getLocation()) || in_main(ns->getBeginLoc()))
        for (Decl* c : ns->noload_decls()) top_decl(c, out);
      return;
    }
    if (auto* ls = dyn_cast<LinkageSpecDecl>(d)) {
      if (in_main(ls->getBeginLoc()))
        for (Decl* c : ls->noload_decls()) top_decl(c, out);
      return;
    }
    if (auto* ex = dyn_cast<ExportDecl>(d)) {
      if (in_main(ex->getBeginLoc()))
        for (Decl* c : ex->noload_decls()) top_decl(c, out);
      return;
    }
    if (!in_main(d->getLocation())) return;
    if (auto* ft = dyn_cast<FunctionTemplateDecl>(d)) {
      if (FunctionDecl* fd = ft->getTemplatedDecl()) function(fd, out, ft->getSourceRange());
      return;
    }
    if (auto* ct = dyn_cast<ClassTemplateDecl>(d)) {
      if (CXXRecordDecl* rd = ct->getTemplatedDecl()) record(rd, out);
      return;
    }
    if (auto* fd = dyn_cast<FunctionDecl>(d)) {
      function(fd, out, fd->getSourceRange());
      return;
    }
    if (auto* rd = dyn_cast<CXXRecordDecl>(d)) {
      record(rd, out);
      return;
    }
    if (auto* vd = dyn_cast<VarDecl>(d)) {
      cur_range_ = rng(vd->getSourceRange(), &cur_range_);
      size_t mark = hoisted_.size();
      std::vector<Id> made;
      var_decl(vd, made, stmt_rng_decl(vd));
      flush(out, mark, made);
    }
  }

  Range stmt_rng_decl(const VarDecl* vd) {
    Range r = rng(vd->getSourceRange(), &cur_range_);
    uint32_t e = r.end;
    std::string_view src = b_.src;
    while (e < src.size() && (src[e] == ' ' || src[e] == '\t')) ++e;
    if (e < src.size() && src[e] == ';') return b_.range(r.begin, e + 1);
    return r;
  }

  // Moves lambda FunctionDefs made since `mark` to the front of `body`.
  void take_hoisted(size_t mark, std::vector<Id>& body) {
    if (hoisted_.size() <= mark) return;
    body.insert(body.begin(), hoisted_.begin() + static_cast<long>(mark), hoisted_.end());
    hoisted_.resize(mark);
  }

  void flush(std::vector<Id>& out, size_t mark, std::vector<Id>& made) {
    for (size_t i = mark; i < hoisted_.size(); ++i) out.push_back(hoisted_[i]);
    hoisted_.resize(mark);
    for (Id s : made) out.push_back(s);
  }

  Id ensure_class(const CXXRecordDecl* rd, std::vector<Id>& out) {
    rd = rd->getCanonicalDecl();
    auto it = class_ids_.find(rd);
    if (it != class_ids_.end()) return it->second;
    // A class defined elsewhere (a header) whose methods this file defines.
    Class c;
    c.name = rd->getNameAsString();
    Range r = cur_range_;
    c.range = r;
    const CXXRecordDecl* def = rd->getDefinition();
    if (def) c.bases = bases_of(def, r);
    Id id = b_.add_class(std::move(c));
    class_ids_[rd] = id;
    Id st = b_.stmt(StmtKind::ClassDef, r);
    b_.s(st).cls = id;
    b_.m.classes[id].stmt = st;
    out.push_back(st);
    return id;
  }

  std::vector<Id> bases_of(const CXXRecordDecl* rd, const Range& r) {
    std::vector<Id> out;
    for (const CXXBaseSpecifier& base : rd->bases()) {
      Range br = rng(base.getSourceRange(), &r);
      const CXXRecordDecl* bd = base.getType()->getAsCXXRecordDecl();
      if (!bd) {
        out.push_back(b_.name(base.getType().getAsString(policy_), br));
        continue;
      }
      if (is_local_record(bd)) {
        out.push_back(b_.name(bd->getNameAsString(), br));
        continue;
      }
      const CXXRecordDecl* impl = nullptr;
      ValueKind k = record_kind(bd, &impl, 0);
      if (impl && is_local_record(impl)) out.push_back(b_.name(impl->getNameAsString(), br));
      else if (k == ValueKind::Module) out.push_back(b_.model_name("torch.nn.Module", br));
      else if (k == ValueKind::Optimizer) out.push_back(b_.model_name("torch.optim.Optimizer", br));
      else out.push_back(b_.qualified(qualified_name(bd), br));
    }
    return out;
  }

  void record(CXXRecordDecl* rd, std::vector<Id>& out) {
    if (!rd->isThisDeclarationADefinition() || rd->isLambda() || rd->isImplicit()) return;
    if (rd->isUnion()) return;
    Range r = rng(rd);
    cur_range_ = r;
    Class c;
    c.name = rd->getNameAsString();
    c.range = r;
    c.bases = bases_of(rd, r);
    Id id = b_.add_class(std::move(c));
    class_ids_[rd->getCanonicalDecl()] = id;
    Id st = b_.stmt(StmtKind::ClassDef, r);
    b_.s(st).cls = id;
    b_.m.classes[id].stmt = st;
    out.push_back(st);
    std::vector<Id> body;
    Id saved = cur_class_;
    cur_class_ = id;
    bool has_ctor_body = false;
    for (Decl* d : rd->decls()) {
      if (d->isImplicit()) continue;
      FunctionDecl* fd = nullptr;
      SourceRange whole;
      if (auto* ft = dyn_cast<FunctionTemplateDecl>(d)) { fd = ft->getTemplatedDecl(); whole = ft->getSourceRange(); }
      else if (auto* f = dyn_cast<FunctionDecl>(d)) { fd = f; whole = f->getSourceRange(); }
      if (fd) {
        if (isa<CXXConstructorDecl>(fd) && fd->doesThisDeclarationHaveABody()) has_ctor_body = true;
        if (fd->doesThisDeclarationHaveABody()) function(fd, body, whole);
        continue;
      }
      if (auto* nested = dyn_cast<CXXRecordDecl>(d)) { record(nested, body); continue; }
      if (auto* ct = dyn_cast<ClassTemplateDecl>(d)) {
        if (ct->getTemplatedDecl()) record(ct->getTemplatedDecl(), body);
        continue;
      }
    }
    // Fields whose type says what they hold: a synthetic __init__ when no constructor is
    // written in this file, so `self.<field>` bindings exist.
    for (const CXXConstructorDecl* c : rd->ctors()) {
      const FunctionDecl* def = c->getDefinition();
      if (def && !def->isImplicit() && !def->isDefaulted() && in_main(def->getLocation())) has_ctor_body = true;
    }
    bool typed_fields = false;
    for (const FieldDecl* fd : rd->fields())
      if (!fd->getName().empty() && (interesting(classify(fd->getType()).kind) || fd->hasInClassInitializer() ||
                                     foreign_record(classify(fd->getType()))))
        typed_fields = true;
    if (!has_ctor_body && typed_fields) {
      Id fst = kNone;
      Id fid = b_.synthetic_init(id, r, &fst);
      Id saved_func = cur_func_;
      cur_func_ = fid;
      size_t fmark = hoisted_.size();
      std::vector<Id> fbody = field_prologue(rd, r);
      take_hoisted(fmark, fbody);
      cur_func_ = saved_func;
      b_.m.funcs[fid].body = std::move(fbody);
      body.push_back(fst);
    }
    cur_class_ = saved;
    b_.s(st).body = std::move(body);
  }

  // `self.f: T = T()` for fields of module/optimizer type, then `self.f = <in-class initializer>`.
  std::vector<Id> field_prologue(const CXXRecordDecl* rd, const Range& fallback) {
    std::vector<Id> out;
    for (const FieldDecl* fd : rd->fields()) {
      if (fd->getName().empty()) continue;
      Range r = rng(fd->getSourceRange(), &fallback);
      TypeInfo ti = classify(fd->getType());
      if (interesting(ti.kind)) {
        Id target = b_.attr(b_.name("self", r), fd->getNameAsString(), r);
        out.push_back(b_.typed_binding(target, ti.qname, ti.local_class, r));
      } else if (foreign_record(ti) && !is_local_record(fd->getType().getNonReferenceType()->getAsCXXRecordDecl())) {
        Id target = b_.attr(b_.name("self", r), fd->getNameAsString(), r);
        out.push_back(b_.typed_binding(target, model_qname(ti.record_name), "", r));
      }
      if (const Expr* init = fd->getInClassInitializer()) {
        Id v = construct_or_expr(init, fd->getType());
        if (v != kNone) {
          Id st = b_.stmt(StmtKind::Assign, r);
          b_.s(st).targets.push_back(b_.attr(b_.name("self", r), fd->getNameAsString(), r));
          b_.s(st).value = v;
          out.push_back(st);
        }
      }
    }
    return out;
  }

  std::string function_name(const FunctionDecl* fd) const {
    if (isa<CXXConstructorDecl>(fd)) return "__init__";
    if (isa<CXXDestructorDecl>(fd)) return "__del__";
    if (fd->getOverloadedOperator() == OO_Call) return "__call__";
    return fd->getNameAsString();
  }

  void function(FunctionDecl* fd, std::vector<Id>& out, SourceRange whole) {
    if (!fd->doesThisDeclarationHaveABody() || !fd->getBody()) return;
    if (fd->isImplicit() || fd->isDefaulted()) return;
    if (!in_main(fd->getBody()->getBeginLoc())) return;  // generated by a macro elsewhere
    Range r = rng(whole, &cur_range_);
    cur_range_ = r;
    Function f;
    f.name = function_name(fd);
    f.range = r;
    f.parent = kNone;
    auto* md = dyn_cast<CXXMethodDecl>(fd);
    Id cls = kNone;
    if (md) {
      const CXXRecordDecl* parent = md->getParent();
      if (parent && !parent->isLambda()) {
        auto it = class_ids_.find(parent->getCanonicalDecl());
        cls = it != class_ids_.end() ? it->second : ensure_class(parent, out);
      }
    }
    f.cls = cls;
    if (md && md->isInstance() && cls != kNone) f.params.push_back("self");
    int unnamed = 0;
    for (const ParmVarDecl* p : fd->parameters())
      f.params.push_back(p->getName().empty() ? "_arg" + std::to_string(unnamed++) : p->getNameAsString());
    Stmt* body = fd->getBody();
    uint32_t hb = r.begin, he = r.begin;
    if (offsets(SourceRange(whole.getBegin(), body->getBeginLoc()), hb, he)) f.header = b_.range(hb, he);
    else f.header = r;
    if (auto* cs = dyn_cast<CompoundStmt>(body); cs && !cs->body_empty())
      f.body_indent = rng(cs->body_front()).col - 1;
    Id fid = b_.add_function(std::move(f));
    Id st = b_.stmt(StmtKind::FunctionDef, r);
    b_.s(st).func = fid;
    b_.m.funcs[fid].stmt = st;
    if (cls != kNone) b_.m.classes[cls].methods.push_back(fid);
    out.push_back(st);

    Id saved_func = cur_func_;
    cur_func_ = fid;
    size_t fmark = hoisted_.size();
    std::vector<Id> lowered;
    // Parameters whose type says what they hold.
    for (const ParmVarDecl* p : fd->parameters()) {
      if (p->getName().empty()) continue;
      TypeInfo ti = classify(p->getType());
      Range pr = rng(p->getSourceRange(), &r);
      if (interesting(ti.kind))
        lowered.push_back(b_.typed_binding(b_.name(p->getNameAsString(), pr), ti.qname, ti.local_class, pr));
      else if (foreign_record(ti) && !is_local_record(p->getType().getNonReferenceType()->getAsCXXRecordDecl()))
        lowered.push_back(b_.typed_binding(b_.name(p->getNameAsString(), pr), model_qname(ti.record_name), "", pr));
    }
    if (auto* ctor = dyn_cast<CXXConstructorDecl>(fd)) {
      for (Id s : field_prologue(ctor->getParent(), r)) lowered.push_back(s);
      for (const CXXCtorInitializer* init : ctor->inits()) {
        if (!init->isWritten() || !init->isMemberInitializer() || !init->getInit()) continue;
        Range ir = rng(init->getSourceRange(), &r);
        size_t mark = hoisted_.size();
        std::vector<Id> made;
        Id v = construct_or_expr(init->getInit(), init->getMember()->getType());
        if (v == kNone) continue;
        Id as = b_.stmt(StmtKind::Assign, ir);
        b_.s(as).targets.push_back(b_.attr(b_.name("self", ir), init->getMember()->getNameAsString(), ir));
        b_.s(as).value = v;
        made.push_back(as);
        flush(lowered, mark, made);
      }
    }
    if (auto* cs = dyn_cast<CompoundStmt>(body)) block(cs->body_begin(), cs->body_end(), lowered, rng(cs).end);
    else if (auto* ts = dyn_cast<CXXTryStmt>(body)) stmt(ts, lowered);
    take_hoisted(fmark, lowered);
    cur_func_ = saved_func;
    b_.m.funcs[fid].body = std::move(lowered);
  }

  // ------------------------------------------------------------------ statements
  template <typename It>
  void block(It begin, It end, std::vector<Id>& out, uint32_t scope_end) {
    for (It it = begin; it != end; ++it) {
      Stmt* s = *it;
      if (auto* ds = dyn_cast<DeclStmt>(s)) {
        // An RAII grad-mode guard: everything after it in this block is its body.
        std::vector<VarDecl*> vars;
        for (Decl* d : ds->decls())
          if (auto* vd = dyn_cast<VarDecl>(d)) vars.push_back(vd);
        size_t gi = vars.size();
        TypeInfo gti;
        for (size_t i = 0; i < vars.size(); ++i) {
          gti = classify(vars[i]->getType());
          if (gti.guard != GuardKind::None && !vars[i]->getType()->isReferenceType() &&
              !vars[i]->getType()->isPointerType()) { gi = i; break; }
        }
        if (gi < vars.size()) {
          Range dr = stmt_rng(ds);
          cur_range_ = dr;
          for (size_t i = 0; i < gi; ++i) {
            size_t mark = hoisted_.size();
            std::vector<Id> made;
            var_decl(vars[i], made, dr);
            flush(out, mark, made);
          }
          VarDecl* g = vars[gi];
          Id arg = kNone;
          if (auto* ce = dyn_cast_or_null<CXXConstructExpr>(strip(g->getInit())))
            for (unsigned k = 0; k < ce->getNumArgs(); ++k)
              if (!isa<CXXDefaultArgExpr>(ce->getArg(k))) { arg = expr(ce->getArg(k)); break; }
          std::vector<Id> rest;
          for (size_t i = gi + 1; i < vars.size(); ++i) {
            size_t mark = hoisted_.size();
            std::vector<Id> made;
            var_decl(vars[i], made, dr);
            flush(rest, mark, made);
          }
          It next = it;
          ++next;
          block(next, end, rest, scope_end);
          std::string spelled = g->getType().getUnqualifiedType().getAsString(policy_);
          out.push_back(b_.guard(gti.guard, split_qualified(spelled).back(), arg, g->getNameAsString(), dr,
                                 scope_end, std::move(rest)));
          return;
        }
      }
      stmt(s, out);
    }
  }

  std::vector<Id> sub(Stmt* s) {
    std::vector<Id> out;
    if (!s) return out;
    if (auto* cs = dyn_cast<CompoundStmt>(s)) block(cs->body_begin(), cs->body_end(), out, rng(cs).end);
    else stmt(s, out);
    return out;
  }

  void stmt(Stmt* s, std::vector<Id>& out) {
    if (!s) return;
    Range r = stmt_rng(s);
    cur_range_ = r;
    if (++depth_ > kMaxDepth) {
      too_deep(r);
      --depth_;
      return;
    }
    size_t mark = hoisted_.size();
    std::vector<Id> made;
    lower_stmt(s, r, made, out, mark);
    flush(out, mark, made);
    --depth_;
  }

  void lower_stmt(Stmt* s, const Range& r, std::vector<Id>& made, std::vector<Id>& out, size_t mark) {
    switch (s->getStmtClass()) {
      case Stmt::CompoundStmtClass: {
        auto* cs = cast<CompoundStmt>(s);
        Id st = b_.stmt(StmtKind::Other, r);
        b_.s(st).text = "block";
        std::vector<Id> body;
        block(cs->body_begin(), cs->body_end(), body, r.end);
        b_.s(st).body = std::move(body);
        made.push_back(st);
        return;
      }
      case Stmt::DeclStmtClass: {
        for (Decl* d : cast<DeclStmt>(s)->decls()) {
          if (auto* vd = dyn_cast<VarDecl>(d)) var_decl(vd, made, r);
          else if (auto* rd = dyn_cast<CXXRecordDecl>(d)) record(rd, made);
        }
        return;
      }
      case Stmt::IfStmtClass: {
        auto* is = cast<IfStmt>(s);
        if (is->getInit()) stmt(is->getInit(), out);
        if (VarDecl* cv = is->getConditionVariable()) var_decl(cv, made, rng(cv));
        Id st = b_.stmt(StmtKind::If, r);
        Id cond = is->getConditionVariable() ? b_.name(is->getConditionVariable()->getNameAsString(), rng(is->getCond()))
                                             : expr(is->getCond());
        b_.s(st).value = cond;
        std::vector<Id> body = sub(is->getThen());
        std::vector<Id> orelse = sub(is->getElse());
        b_.s(st).body = std::move(body);
        b_.s(st).orelse = std::move(orelse);
        made.push_back(st);
        return;
      }
      case Stmt::ForStmtClass: {
        auto* fs = cast<ForStmt>(s);
        std::vector<Id> targets;
        if (Stmt* init = fs->getInit()) {
          stmt(init, out);
          if (auto* ds = dyn_cast<DeclStmt>(init)) {
            for (Decl* d : ds->decls())
              if (auto* vd = dyn_cast<VarDecl>(d)) targets.push_back(b_.name(vd->getNameAsString(), rng(vd)));
          } else if (auto* bo = dyn_cast<BinaryOperator>(strip(cast<Expr>(init))); bo && bo->isAssignmentOp()) {
            targets.push_back(expr(bo->getLHS()));
          }
        }
        Id st = b_.stmt(StmtKind::For, r);
        Id iter = fs->getCond() ? expr(fs->getCond()) : b_.expr(ExprKind::Other, r);
        b_.s(st).value = iter;
        b_.s(st).targets = std::move(targets);
        std::vector<Id> body = sub(fs->getBody());
        if (Expr* inc = fs->getInc()) {
          Id is = b_.stmt(StmtKind::Expr, rng(inc));
          Id v = expr(inc);
          b_.s(is).value = v;
          body.push_back(is);
        }
        b_.s(st).body = std::move(body);
        made.push_back(st);
        return;
      }
      case Stmt::CXXForRangeStmtClass: {
        auto* fs = cast<CXXForRangeStmt>(s);
        if (fs->getInit()) stmt(fs->getInit(), out);
        Id st = b_.stmt(StmtKind::For, r);
        Id iter = fs->getRangeInit() ? expr(fs->getRangeInit()) : b_.expr(ExprKind::Other, r);
        b_.s(st).value = iter;
        if (VarDecl* lv = fs->getLoopVariable()) b_.s(st).targets.push_back(loop_target(lv));
        std::vector<Id> body = sub(fs->getBody());
        b_.s(st).body = std::move(body);
        made.push_back(st);
        return;
      }
      case Stmt::WhileStmtClass: {
        auto* ws = cast<WhileStmt>(s);
        Id st = b_.stmt(StmtKind::While, r);
        Id cond = ws->getConditionVariable()
                      ? b_.name(ws->getConditionVariable()->getNameAsString(), rng(ws->getCond()))
                      : expr(ws->getCond());
        b_.s(st).value = cond;
        std::vector<Id> body;
        if (VarDecl* cv = ws->getConditionVariable()) var_decl(cv, body, rng(cv));
        for (Id x : sub(ws->getBody())) body.push_back(x);
        b_.s(st).body = std::move(body);
        made.push_back(st);
        return;
      }
      case Stmt::DoStmtClass: {
        auto* ds = cast<DoStmt>(s);
        Id st = b_.stmt(StmtKind::While, r);
        Id cond = expr(ds->getCond());
        b_.s(st).value = cond;
        std::vector<Id> body = sub(ds->getBody());
        b_.s(st).body = std::move(body);
        b_.s(st).text = "do";
        made.push_back(st);
        return;
      }
      case Stmt::SwitchStmtClass: {
        auto* ss = cast<SwitchStmt>(s);
        if (ss->getInit()) stmt(ss->getInit(), out);
        Id st = b_.stmt(StmtKind::If, r);
        Id cond = expr(ss->getCond());
        b_.s(st).value = cond;
        std::vector<Id> body = sub(ss->getBody());
        b_.s(st).body = std::move(body);
        b_.s(st).text = "switch";
        made.push_back(st);
        return;
      }
      case Stmt::CaseStmtClass:
        stmt(cast<CaseStmt>(s)->getSubStmt(), made);
        return;
      case Stmt::DefaultStmtClass:
        stmt(cast<DefaultStmt>(s)->getSubStmt(), made);
        return;
      case Stmt::LabelStmtClass:
        stmt(cast<LabelStmt>(s)->getSubStmt(), made);
        return;
      case Stmt::AttributedStmtClass:
        stmt(cast<AttributedStmt>(s)->getSubStmt(), made);
        return;
      case Stmt::ReturnStmtClass: {
        Id st = b_.stmt(StmtKind::Return, r);
        Id v = cast<ReturnStmt>(s)->getRetValue() ? expr(cast<ReturnStmt>(s)->getRetValue()) : kNone;
        b_.s(st).value = v;
        made.push_back(st);
        return;
      }
      case Stmt::BreakStmtClass: made.push_back(b_.stmt(StmtKind::Break, r)); return;
      case Stmt::ContinueStmtClass: made.push_back(b_.stmt(StmtKind::Continue, r)); return;
      case Stmt::NullStmtClass: return;
      case Stmt::CXXTryStmtClass: {
        auto* ts = cast<CXXTryStmt>(s);
        Id st = b_.stmt(StmtKind::Try, r);
        std::vector<Id> body = sub(ts->getTryBlock());
        std::vector<Handler> handlers;
        for (unsigned i = 0; i < ts->getNumHandlers(); ++i) {
          CXXCatchStmt* c = ts->getHandler(i);
          Handler h;
          h.range = rng(c);
          if (VarDecl* ev = c->getExceptionDecl()) {
            h.name = ev->getNameAsString();
            QualType t = c->getCaughtType().getNonReferenceType();
            const CXXRecordDecl* rd = t->getAsCXXRecordDecl();
            h.type = rd ? b_.qualified(qualified_name(rd), rng(ev)) : b_.name(t.getAsString(policy_), rng(ev));
          }
          h.body = sub(c->getHandlerBlock());
          handlers.push_back(std::move(h));
        }
        b_.s(st).body = std::move(body);
        b_.s(st).handlers = std::move(handlers);
        made.push_back(st);
        return;
      }
      default:
        break;
    }
    if (auto* e = dyn_cast<Expr>(s)) {
      expr_stmt(e, r, made);
      return;
    }
    // Anything else: walk its sub-statements as an opaque block.
    Id st = b_.stmt(StmtKind::Other, r);
    std::vector<Id> body;
    for (Stmt* c : s->children())
      if (c) stmt(c, body);
    b_.s(st).body = std::move(body);
    made.push_back(st);
  }

  Id loop_target(VarDecl* lv) {
    Range r = rng(lv->getLocation().isValid() ? SourceRange(lv->getLocation(), lv->getLocation()) : lv->getSourceRange(),
                  &cur_range_);
    if (auto* dd = dyn_cast<DecompositionDecl>(lv)) {
      std::vector<Id> kids;
      for (BindingDecl* bd : dd->bindings()) kids.push_back(b_.name(bd->getNameAsString(), rng(bd)));
      return b_.expr(ExprKind::Sequence, rng(dd), "tuple", kids);
    }
    return b_.name(lv->getNameAsString(), r);
  }

  void expr_stmt(Expr* e, const Range& r, std::vector<Id>& made) {
    Expr* x = strip(e);
    // Assignments.
    if (auto* bo = dyn_cast<BinaryOperator>(x)) {
      if (bo->getOpcode() == BO_Assign) { made.push_back(assign(bo->getLHS(), bo->getRHS(), r)); return; }
      if (bo->isCompoundAssignmentOp()) {
        made.push_back(aug_assign(bo->getLHS(), bo->getRHS(), bo->getOpcodeStr().str(), r));
        return;
      }
    }
    if (auto* oc = dyn_cast<CXXOperatorCallExpr>(x); oc && oc->getNumArgs() == 2) {
      OverloadedOperatorKind op = oc->getOperator();
      if (op == OO_Equal) { made.push_back(assign(oc->getArg(0), oc->getArg(1), r)); return; }
      if (op == OO_PlusEqual || op == OO_MinusEqual || op == OO_StarEqual || op == OO_SlashEqual ||
          op == OO_PercentEqual || op == OO_AmpEqual || op == OO_PipeEqual || op == OO_CaretEqual ||
          op == OO_LessLessEqual || op == OO_GreaterGreaterEqual) {
        made.push_back(aug_assign(oc->getArg(0), oc->getArg(1), std::string(getOperatorSpelling(op)), r));
        return;
      }
    }
    // Releases: `p.reset()`, `v.clear()`, `delete p`.
    if (auto* mc = dyn_cast<CXXMemberCallExpr>(x)) {
      const CXXMethodDecl* md = mc->getMethodDecl();
      auto* me = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens());
      std::string mname = md && md->getIdentifier() ? md->getNameAsString() : "";
      if (md && me && mc->getNumArgs() == 0 && (mname == "reset" || mname == "clear")) {
        TypeInfo ti = classify(strip(me->getBase())->getType());
        bool release = mname == "reset" ? (ti.smart || ti.kind == ValueKind::Tensor) && !me->isArrow()
                                                 : ti.kind == ValueKind::Container;
        if (release) {
          Id st = b_.stmt(StmtKind::Delete, r);
          Id t = object(me->getBase());
          b_.s(st).targets.push_back(t);
          made.push_back(st);
          return;
        }
      }
    }
    if (auto* de = dyn_cast<CXXDeleteExpr>(x)) {
      Id st = b_.stmt(StmtKind::Delete, r);
      Id t = expr(de->getArgument());
      b_.s(st).targets.push_back(t);
      made.push_back(st);
      return;
    }
    Id st = b_.stmt(StmtKind::Expr, r);
    Id v = expr(e);
    b_.s(st).value = v;
    made.push_back(st);
  }

  Id assign(Expr* lhs, Expr* rhs, const Range& r) {
    Id st = b_.stmt(StmtKind::Assign, r);
    Id t = tie_target(lhs, 0);
    Id v = numeric(construct_or_expr(rhs, lhs->getType()), lhs->getType());
    b_.s(st).targets.push_back(t);
    b_.s(st).value = v;
    return st;
  }

  // std::tie(h, c) = f(...)  ->  h, c = f(...)
  // std::forward_as_tuple(out, std::tie(h, c)) = f(...)  ->  out, (h, c) = f(...)
  Id tie_target(Expr* lhs, int depth) {
    auto* call = dyn_cast<CallExpr>(strip(lhs));
    const FunctionDecl* fd = call ? call->getDirectCallee() : nullptr;
    std::string qn = fd ? qualified_name(fd) : "";
    if (depth > 8 || (qn != "std::tie" && qn != "std::forward_as_tuple")) return expr(lhs);
    std::vector<Id> kids;
    for (unsigned i = 0; i < call->getNumArgs(); ++i) kids.push_back(tie_target(call->getArg(i), depth + 1));
    return b_.expr(ExprKind::Sequence, rng(lhs), "tuple", kids);
  }

  Id aug_assign(Expr* lhs, Expr* rhs, std::string op, const Range& r) {
    Id st = b_.stmt(StmtKind::AugAssign, r);
    Id t = expr(lhs);
    Id v = numeric(expr(rhs), lhs->getType());
    b_.s(st).targets.push_back(t);
    b_.s(st).value = v;
    b_.s(st).text = std::move(op);
    return st;
  }

  void var_decl(VarDecl* vd, std::vector<Id>& made, const Range& r) {
    if (vd->getName().empty() && !isa<DecompositionDecl>(vd)) return;
    if (isa<ParmVarDecl>(vd)) return;
    Range nr = rng(SourceRange(vd->getLocation(), vd->getLocation()), &r);
    auto target = [&]() -> Id {
      if (auto* dd = dyn_cast<DecompositionDecl>(vd)) {
        std::vector<Id> kids;
        for (BindingDecl* bd : dd->bindings()) kids.push_back(b_.name(bd->getNameAsString(), rng(bd)));
        return b_.expr(ExprKind::Sequence, r, "tuple", kids);
      }
      return b_.name(vd->getNameAsString(), nr);
    };
    TypeInfo ti = classify(vd->getType());
    Expr* init = vd->getInit();
    Id value = kNone;
    if (init) {
      if (auto* le = dyn_cast<LambdaExpr>(strip(init))) value = lambda(le, vd->getNameAsString());
      else value = construct_or_expr(init, vd->getType());
    }
    bool direct = false;  // the initialiser itself constructs the class: no extra binding needed
    if (value != kNone && b_.e(value).kind == ExprKind::Call) {
      const ll::Expr& callee = b_.e(b_.e(value).kids[0]);
      direct = (!ti.local_class.empty() && callee.text == ti.local_class && callee.qname.empty()) ||
               (!ti.qname.empty() && callee.qname == ti.qname);
    }
    if (interesting(ti.kind) && !direct) made.push_back(b_.typed_binding(target(), ti.qname, ti.local_class, r));
    if (value == kNone) return;
    if (!isa<DecompositionDecl>(vd)) value = numeric(value, vd->getType());
    Id st = b_.stmt(StmtKind::Assign, r);
    b_.s(st).targets.push_back(target());
    b_.s(st).value = value;
    made.push_back(st);
  }

  // ------------------------------------------------------------------ expressions
  static Expr* strip(Expr* e) {
    for (int guard = 0; e && guard < 64; ++guard) {
      if (auto* p = dyn_cast<ParenExpr>(e)) e = p->getSubExpr();
      else if (auto* ic = dyn_cast<ImplicitCastExpr>(e)) e = ic->getSubExpr();
      else if (auto* fe = dyn_cast<FullExpr>(e)) e = fe->getSubExpr();
      else if (auto* mt = dyn_cast<MaterializeTemporaryExpr>(e)) e = mt->getSubExpr();
      else if (auto* bt = dyn_cast<CXXBindTemporaryExpr>(e)) e = bt->getSubExpr();
      else break;
    }
    return e;
  }
  static const Expr* strip(const Expr* e) { return strip(const_cast<Expr*>(e)); }

  // The object of `x.m` / `x->m`: holders' and smart pointers' operator-> are looked through.
  Id object(Expr* base) {
    Expr* b = strip(base);
    if (auto* oc = dyn_cast<CXXOperatorCallExpr>(b); oc && oc->getOperator() == OO_Arrow && oc->getNumArgs() >= 1)
      return expr(oc->getArg(0));
    if (isa<CXXThisExpr>(b)) return b_.name("self", rng(b));
    return expr(base);
  }

  std::vector<Id> args_of(const CallExpr* c, unsigned first = 0) {
    std::vector<Id> out;
    for (unsigned i = first; i < c->getNumArgs(); ++i) {
      const Expr* a = c->getArg(i);
      if (isa<CXXDefaultArgExpr>(a)) continue;
      out.push_back(expr(const_cast<Expr*>(a)));
    }
    return out;
  }

  bool is_null(const Expr* e) const {
    e = strip(e);
    return isa<CXXNullPtrLiteralExpr>(e) || isa<GNUNullExpr>(e);
  }

  // A construction of `t` (or any expression when `e` is not one).
  Id construct_or_expr(const Expr* e, QualType t) {
    if (!e) return kNone;
    const Expr* x = strip(e);
    if (auto* ce = dyn_cast<CXXConstructExpr>(x)) return construct(const_cast<CXXConstructExpr*>(ce), /*declared=*/true);
    if (auto* ile = dyn_cast<InitListExpr>(x); ile && !t.isNull() && t->getAsCXXRecordDecl() == nullptr &&
                                               ile->getNumInits() == 1)
      return expr(const_cast<Expr*>(ile->getInit(0)));
    return expr(const_cast<Expr*>(e));
  }

  // `declared`: the construction initialises a declared variable/field (`T v(args)`), as
  // opposed to an implicit conversion of an argument or return value.
  Id construct(CXXConstructExpr* ce, bool declared = false) {
    Range r = rng(ce);
    const CXXConstructorDecl* ctor = ce->getConstructor();
    std::vector<Expr*> args;
    for (unsigned i = 0; i < ce->getNumArgs(); ++i)
      if (!isa<CXXDefaultArgExpr>(ce->getArg(i))) args.push_back(ce->getArg(i));
    // Copies, moves and implicit conversions are transparent.
    if (ctor && (ctor->isCopyOrMoveConstructor()) && args.size() == 1) return expr(args[0]);
    if (!isa<CXXTemporaryObjectExpr>(ce) && !declared) {
      // An implicit conversion (`{a, b}` to IntArrayRef, a Tensor to IValue, a pair from
      // `return {a, b};`): the value(s) themselves.
      if (args.size() == 1) return expr(args[0]);
      if (args.size() > 1) {
        std::vector<Id> kids;
        for (Expr* a : args) kids.push_back(expr(a));
        return b_.expr(ExprKind::Sequence, r, "tuple", kids);
      }
    }
    QualType t = ce->getType();
    TypeInfo ti = classify(t);
    // A tuple or pair built from its elements (`std::tuple<Tensor, Tensor>(y, z)`): the
    // elements, as `std::make_tuple` and `return {y, z};` give.
    if (args.size() > 1 && (ti.record_name == "std::tuple" || ti.record_name == "std::pair")) {
      std::vector<Id> kids;
      for (Expr* a : args) kids.push_back(expr(a));
      return b_.expr(ExprKind::Sequence, r, "tuple", kids);
    }
    // Empty tensors, smart pointers and `Holder{nullptr}` hold nothing: `None`.
    if ((ti.kind == ValueKind::Tensor || ti.kind == ValueKind::SmartPtr || ti.smart) && args.empty())
      return b_.literal(LitKind::None, "None", r);
    if ((ti.holder || ti.smart || ti.kind == ValueKind::Tensor) && args.size() == 1 && is_null(args[0]))
      return b_.literal(LitKind::None, "None", r);
    if (ti.kind == ValueKind::Container) {
      std::vector<Id> elems;
      for (Expr* a : args) {
        Expr* s = strip(a);
        if (auto* il = dyn_cast<CXXStdInitializerListExpr>(s)) s = strip(il->getSubExpr());
        if (auto* ile = dyn_cast<InitListExpr>(s))
          for (Expr* el : ile->inits()) elems.push_back(expr(el));
      }
      return b_.expr(ExprKind::Sequence, r, "list", elems);
    }
    Id callee = type_callee(t, r);
    std::vector<Id> lowered;
    for (Expr* a : args) lowered.push_back(expr(a));
    return b_.call(callee, lowered, r);
  }

  // `torch::data::make_data_loader(ds, torch::data::DataLoaderOptions().workers(12).batch_size(64))`
  // -> torch.utils.data.DataLoader(ds, num_workers=12, batch_size=64)
  void loader_options(const Expr* e, std::vector<std::pair<std::string, Id>>& kws, int depth) {
    if (!e || depth > 16) return;
    const Expr* x = strip(e);
    if (auto* fc = dyn_cast<CXXFunctionalCastExpr>(x)) x = strip(fc->getSubExpr());
    if (auto* ce = dyn_cast<CXXConstructExpr>(x)) {
      for (unsigned i = 0; i < ce->getNumArgs(); ++i) {
        const Expr* a = strip(ce->getArg(i));
        if (isa<CXXDefaultArgExpr>(a)) continue;
        QualType at = a->getType();
        if (at->isIntegerType()) kws.emplace_back("batch_size", expr(const_cast<Expr*>(a)));
        else loader_options(a, kws, depth + 1);  // copy of another options object
      }
      return;
    }
    if (auto* mc = dyn_cast<CXXMemberCallExpr>(x)) {
      auto* me = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens());
      if (!me) return;
      loader_options(me->getBase(), kws, depth + 1);
      std::string m = me->getMemberNameInfo().getAsString();
      static const std::pair<const char*, const char*> names[] = {
          {"workers", "num_workers"}, {"batch_size", "batch_size"}, {"drop_last", "drop_last"},
          {"max_jobs", "max_jobs"},   {"timeout", "timeout"},       {"enforce_ordering", "enforce_ordering"}};
      for (auto [cxx, py] : names)
        if (m == cxx && mc->getNumArgs() >= 1) {
          for (auto& kw : kws)
            if (kw.first == py) kw.first = "";  // the later setter wins
          kws.emplace_back(py, expr(const_cast<Expr*>(mc->getArg(0))));
        }
      return;
    }
    if (auto* dr = dyn_cast<DeclRefExpr>(x))
      if (auto* vd = dyn_cast<VarDecl>(dr->getDecl()); vd && vd->getInit() && vd->hasLocalStorage())
        loader_options(vd->getInit(), kws, depth + 1);
  }

  Id data_loader(CallExpr* c, const FunctionDecl* fd) {
    Range r = rng(c);
    Id callee = b_.qualified(qualified_name(fd), rng(c->getCallee()));
    std::vector<Id> pos;
    std::vector<std::pair<std::string, Id>> kws;
    for (unsigned i = 0; i < c->getNumArgs(); ++i) {
      const Expr* a = strip(c->getArg(i));
      if (isa<CXXDefaultArgExpr>(a)) continue;
      QualType at = a->getType();
      const CXXRecordDecl* rd = at->getAsCXXRecordDecl();
      std::string rn = rd ? qualified_name(rd) : "";
      if (rn == "torch::data::DataLoaderOptions") loader_options(a, kws, 0);
      else if (i > 0 && at->isIntegerType()) kws.emplace_back("batch_size", expr(const_cast<Expr*>(a)));
      else if (i == 0) pos.push_back(expr(c->getArg(i)));
      else kws.emplace_back(i == 1 ? "sampler" : "arg" + std::to_string(i), expr(c->getArg(i)));
    }
    std::vector<std::pair<std::string, Id>> clean;
    for (auto& kw : kws)
      if (!kw.first.empty()) clean.push_back(kw);
    return b_.call(callee, pos, r, clean);
  }

  // Does the expression name the CUDA device (`torch::kCUDA`, `torch::Device("cuda:0")`, ...)?
  Id cuda_device_in(const Expr* e, int depth = 0) {
    if (!e || depth > 12) return kNone;
    const Expr* x = strip(e);
    if (auto* dr = dyn_cast<DeclRefExpr>(x)) {
      if (is_cuda_device_constant(qualified_name(dr->getDecl()))) return b_.literal(LitKind::String, "cuda", rng(dr));
      return kNone;
    }
    if (auto* sl = dyn_cast<StringLiteral>(x)) {
      if (sl->isOrdinary() && sl->getString().starts_with("cuda")) return b_.literal(LitKind::String, sl->getString().str(), rng(sl));
      return kNone;
    }
    for (const Stmt* c : x->children())
      if (auto* ce = dyn_cast_or_null<Expr>(c))
        if (Id d = cuda_device_in(ce, depth + 1); d != kNone) return d;
    return kNone;
  }

  Id call_expr(CallExpr* c) {
    Range r = rng(c);
    const FunctionDecl* fd = c->getDirectCallee();
    std::string qn = fd ? qualified_name(fd) : "";
    if (fd && qn == "torch::data::make_data_loader") return data_loader(c, fd);
    if (fd && (qn == "std::make_shared" || qn == "std::make_unique" || qn == "c10::make_intrusive")) {
      if (const TemplateArgumentList* ta = fd->getTemplateSpecializationArgs())
        if (ta->size() > 0 && ta->get(0).getKind() == TemplateArgument::Type) {
          Id callee = type_callee(ta->get(0).getAsType(), rng(c->getCallee()));
          return b_.call(callee, args_of(c), r);
        }
    }
    if (fd && qn == "torch::load" && c->getNumArgs() >= 2 && classify(c->getArg(0)->getType()).kind == ValueKind::Module) {
      // torch::load(module, path) loads weights into an existing module: module.load_state_dict(torch.load(path))
      Id recv = expr(c->getArg(0));
      Id load = b_.call(b_.model_name("torch.load", rng(c->getCallee())), args_of(c, 1), r);
      return b_.call(b_.attr(recv, "load_state_dict", r), {load}, r);
    }
    if (fd && qn == "std::get" && c->getNumArgs() == 1)
      if (const TemplateArgumentList* ta = fd->getTemplateSpecializationArgs())
        if (ta->size() > 0 && ta->get(0).getKind() == TemplateArgument::Integral) {
          // std::get<1>(t) -> t[1]: the element of a tuple (a forward's outputs) keeps what it is.
          Id t = expr(c->getArg(0));
          Id idx = b_.literal(LitKind::Int, std::to_string(ta->get(0).getAsIntegral().getExtValue()), rng(c->getCallee()));
          return b_.expr(ExprKind::Subscript, r, "", {t, idx});
        }
    if (fd && (qn == "std::make_tuple" || qn == "std::make_pair")) {
      // std::make_tuple(y, y.argmax(1)) -> (y, y.argmax(1)): a forward returning several outputs
      // returns what each of them is, as Python's `return y, y.argmax(1)` does.
      return b_.expr(ExprKind::Sequence, r, "tuple", args_of(c));
    }
    if (fd && (qn == "std::min" || qn == "std::max" || qn == "std::abs")) {
      // Python's builtins of the same name (LL402 reads `min(...)` as a bound).
      return b_.call(b_.name(fd->getNameAsString(), rng(c->getCallee())), args_of(c), r);
    }
    if (fd && qn == "std::thread::hardware_concurrency")
      return b_.call(b_.model_name("os.cpu_count", rng(c->getCallee())), {}, r);
    Id callee = expr(c->getCallee());
    std::vector<Id> args = args_of(c);
    std::vector<std::pair<std::string, Id>> kws;
    const std::string& cq = b_.e(callee).qname;
    if (cq.rfind("torch.", 0) == 0 && cq != "torch.device") {
      for (unsigned i = 0; i < c->getNumArgs(); ++i) {
        QualType at = c->getArg(i)->getType();
        std::string ts = at.isNull() ? "" : at.getCanonicalType().getAsString(policy_);
        if (ts.find("Device") == std::string::npos && ts.find("TensorOptions") == std::string::npos) continue;
        if (Id d = cuda_device_in(c->getArg(i)); d != kNone) { kws.emplace_back("device", d); break; }
      }
    }
    return b_.call(callee, args, r, kws);
  }

  Id member_call(CXXMemberCallExpr* mc) {
    Range r = rng(mc);
    auto* me = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens());
    const CXXMethodDecl* md = mc->getMethodDecl();
    if (!me) return b_.call(expr(mc->getCallee()), args_of(mc), r);
    if (md && isa<CXXConversionDecl>(md)) return object(me->getBase());  // implicit `operator bool()` etc.
    std::string name = me->getMemberNameInfo().getAsString();
    TypeInfo recv = classify(strip(me->getBase())->getType());
    if (recv.kind == ValueKind::Container) name = container_method(name);
    if (recv.kind == ValueKind::JitMethod && name == "run") name = "forward";  // method.run(stack)
    Id obj = object(me->getBase());
    Range cr = rng(SourceRange(me->getBeginLoc(), me->getMemberLoc()), &r);
    Id callee = b_.attr(obj, name, cr);
    std::vector<Id> args = args_of(mc);
    if (recv.kind == ValueKind::Container && (name == "append" || name == "appendleft"))
      for (unsigned i = 0; i < mc->getNumArgs() && i < args.size(); ++i)
        args[i] = numeric(args[i], mc->getArg(i)->getType());
    std::vector<std::pair<std::string, Id>> kws;
    return b_.call(callee, args, r, kws);
  }

  Id operator_call(CXXOperatorCallExpr* oc) {
    Range r = rng(oc);
    OverloadedOperatorKind op = oc->getOperator();
    unsigned n = oc->getNumArgs();
    if (op == OO_Call && n >= 1) {
      Id callee = object(oc->getArg(0));
      return b_.call(callee, args_of(oc, 1), r);
    }
    if (op == OO_Arrow && n >= 1) return expr(oc->getArg(0));
    if (op == OO_Subscript && n == 2) return b_.expr(ExprKind::Subscript, r, "", {expr(oc->getArg(0)), expr(oc->getArg(1))});
    std::string spelling = getOperatorSpelling(op);
    if (n == 2) {
      Id a = expr(oc->getArg(0)), c = expr(oc->getArg(1));
      switch (op) {
        case OO_EqualEqual: case OO_ExclaimEqual: case OO_Less: case OO_Greater: case OO_LessEqual:
        case OO_GreaterEqual: case OO_Spaceship:
          return b_.expr(ExprKind::Compare, r, spelling, {a, c});
        case OO_AmpAmp: return b_.expr(ExprKind::BoolOp, r, "and", {a, c});
        case OO_PipePipe: return b_.expr(ExprKind::BoolOp, r, "or", {a, c});
        case OO_Comma: return b_.expr(ExprKind::Other, r, ",", {a, c});
        default: return b_.expr(ExprKind::BinOp, r, spelling, {a, c});
      }
    }
    if (n == 1 && op == OO_Star) return expr(oc->getArg(0));  // *loader: the object itself
    if (n == 1) {
      Id a = expr(oc->getArg(0));
      return b_.expr(ExprKind::UnaryOp, r, op == OO_Exclaim ? "not" : spelling, {a});
    }
    return b_.expr(ExprKind::Other, r, spelling, args_of(oc));
  }

  Id lambda(LambdaExpr* le, const std::string& hint) {
    Range r = rng(le);
    std::string name = hint.empty() ? "<lambda:" + std::to_string(r.line) + ":" + std::to_string(r.col) + ">" : hint;
    Function f;
    f.name = name;
    f.parent = cur_func_;
    f.range = r;
    f.header = r;
    CXXMethodDecl* op = le->getCallOperator();
    int unnamed = 0;
    if (op)
      for (const ParmVarDecl* p : op->parameters())
        f.params.push_back(p->getName().empty() ? "_arg" + std::to_string(unnamed++) : p->getNameAsString());
    Id fid = b_.add_function(std::move(f));
    Id st = b_.stmt(StmtKind::FunctionDef, r);
    b_.s(st).func = fid;
    b_.m.funcs[fid].stmt = st;
    Id saved = cur_func_;
    cur_func_ = fid;
    std::vector<Id> body;
    size_t mark = hoisted_.size();
    if (auto* cs = dyn_cast_or_null<CompoundStmt>(le->getBody())) block(cs->body_begin(), cs->body_end(), body, rng(cs).end);
    // Lambdas defined inside this lambda's body were flushed by its statements.
    take_hoisted(mark, body);
    cur_func_ = saved;
    b_.m.funcs[fid].body = std::move(body);
    hoisted_.push_back(st);
    ++lambda_counter_;
    return b_.name(name, r);
  }

  Id expr(Expr* e) {
    if (!e) return b_.expr(ExprKind::Other, cur_range_);
    if (++depth_ > kMaxDepth) {
      Range r = rng(e);
      too_deep(r);
      --depth_;
      return b_.expr(ExprKind::Other, r);
    }
    Id id = lower_expr(e);
    --depth_;
    return id;
  }

  Id lower_expr(Expr* e0) {
    Expr* e = strip(e0);
    Range r = rng(e);
    switch (e->getStmtClass()) {
      case Stmt::DeclRefExprClass: {
        auto* dr = cast<DeclRefExpr>(e);
        ValueDecl* d = dr->getDecl();
        if (auto* fd = dyn_cast<FunctionDecl>(d)) {
          const FunctionDecl* def = fd->getDefinition();
          if (def && in_main(def->getLocation()) && !isa<CXXMethodDecl>(fd)) return b_.name(fd->getNameAsString(), r);
          return b_.qualified(qualified_name(fd), r);
        }
        if (isa<EnumConstantDecl>(d) || (isa<VarDecl>(d) && !cast<VarDecl>(d)->isLocalVarDeclOrParm() &&
                                         !in_main(d->getLocation()))) {
          std::string qn = qualified_name(d);
          if (is_cuda_device_constant(qn)) return b_.literal(LitKind::String, "cuda", r);
          return b_.qualified(qn, r);
        }
        return b_.name(d->getNameAsString(), r);
      }
      case Stmt::MemberExprClass: {
        auto* me = cast<MemberExpr>(e);
        Id obj = me->isImplicitAccess() || isa<CXXThisExpr>(strip(me->getBase())) ? b_.name("self", r)
                                                                                   : object(me->getBase());
        return b_.attr(obj, me->getMemberNameInfo().getAsString(), r);
      }
      case Stmt::CXXMemberCallExprClass: return member_call(cast<CXXMemberCallExpr>(e));
      case Stmt::CXXOperatorCallExprClass: return operator_call(cast<CXXOperatorCallExpr>(e));
      case Stmt::CallExprClass:
      case Stmt::UserDefinedLiteralClass:
        return call_expr(cast<CallExpr>(e));
      case Stmt::CXXConstructExprClass:
      case Stmt::CXXTemporaryObjectExprClass:
        return construct(cast<CXXConstructExpr>(e));
      case Stmt::CXXFunctionalCastExprClass: {
        auto* fc = cast<CXXFunctionalCastExpr>(e);
        Expr* sub = strip(fc->getSubExpr());
        if (auto* ce = dyn_cast<CXXConstructExpr>(sub)) {
          TypeInfo ti = classify(ce->getType());
          std::vector<Expr*> args;
          for (unsigned i = 0; i < ce->getNumArgs(); ++i)
            if (!isa<CXXDefaultArgExpr>(ce->getArg(i))) args.push_back(ce->getArg(i));
          if ((ti.holder || ti.smart || ti.kind == ValueKind::Tensor) && args.size() == 1 && is_null(args[0]))
            return b_.literal(LitKind::None, "None", r);
          Id callee = type_callee(ce->getType(), r);
          std::vector<Id> lowered;
          for (Expr* a : args) lowered.push_back(expr(a));
          return b_.call(callee, lowered, r);
        }
        return expr(fc->getSubExpr());
      }
      case Stmt::CXXStaticCastExprClass:
      case Stmt::CStyleCastExprClass:
      case Stmt::CXXReinterpretCastExprClass:
      case Stmt::CXXConstCastExprClass:
      case Stmt::CXXDynamicCastExprClass:
        return expr(cast<ExplicitCastExpr>(e)->getSubExpr());
      case Stmt::UnaryOperatorClass: {
        auto* uo = cast<UnaryOperator>(e);
        // `*loader`, `*ptr`: Python has no dereference; the value is the object itself.
        if (uo->getOpcode() == UO_Deref) return expr(uo->getSubExpr());
        std::string op = UnaryOperator::getOpcodeStr(uo->getOpcode()).str();
        if (uo->getOpcode() == UO_LNot) op = "not";
        return b_.expr(ExprKind::UnaryOp, r, op, {expr(uo->getSubExpr())});
      }
      case Stmt::BinaryOperatorClass:
      case Stmt::CompoundAssignOperatorClass: {
        auto* bo = cast<BinaryOperator>(e);
        Id a = expr(bo->getLHS()), c = expr(bo->getRHS());
        if (bo->isComparisonOp()) return b_.expr(ExprKind::Compare, r, bo->getOpcodeStr().str(), {a, c});
        if (bo->getOpcode() == BO_LAnd) return b_.expr(ExprKind::BoolOp, r, "and", {a, c});
        if (bo->getOpcode() == BO_LOr) return b_.expr(ExprKind::BoolOp, r, "or", {a, c});
        if (bo->getOpcode() == BO_Comma) return b_.expr(ExprKind::Other, r, ",", {a, c});
        return b_.expr(ExprKind::BinOp, r, bo->getOpcodeStr().str(), {a, c});
      }
      case Stmt::ConditionalOperatorClass: {
        auto* co = cast<ConditionalOperator>(e);
        Id body = expr(co->getTrueExpr()), test = expr(co->getCond()), orelse = expr(co->getFalseExpr());
        return b_.expr(ExprKind::Conditional, r, "", {body, test, orelse});
      }
      case Stmt::ArraySubscriptExprClass: {
        auto* as = cast<ArraySubscriptExpr>(e);
        return b_.expr(ExprKind::Subscript, r, "", {expr(as->getBase()), expr(as->getIdx())});
      }
      case Stmt::IntegerLiteralClass:
        return b_.literal(LitKind::Int, text(r), r);
      case Stmt::FloatingLiteralClass:
        return b_.literal(LitKind::Float, text(r), r);
      case Stmt::CXXBoolLiteralExprClass:
        return cast<CXXBoolLiteralExpr>(e)->getValue() ? b_.literal(LitKind::True, "True", r)
                                                       : b_.literal(LitKind::False, "False", r);
      case Stmt::CXXNullPtrLiteralExprClass:
      case Stmt::GNUNullExprClass:
        return b_.literal(LitKind::None, "None", r);
      case Stmt::StringLiteralClass: {
        auto* sl = cast<StringLiteral>(e);
        return b_.literal(LitKind::String, sl->isOrdinary() || sl->isUTF8() ? sl->getString().str() : text(r), r);
      }
      case Stmt::CharacterLiteralClass:
        return b_.literal(LitKind::Other, text(r), r);
      case Stmt::CXXThisExprClass:
        return b_.name("self", r);
      case Stmt::LambdaExprClass:
        return lambda(cast<LambdaExpr>(e), "");
      case Stmt::InitListExprClass: {
        auto* il = cast<InitListExpr>(e);
        std::vector<Id> kids;
        for (Expr* x : il->inits()) kids.push_back(expr(x));
        return b_.expr(ExprKind::Sequence, r, "list", kids);
      }
      case Stmt::CXXStdInitializerListExprClass:
        return expr(cast<CXXStdInitializerListExpr>(e)->getSubExpr());
      case Stmt::CXXNewExprClass: {
        auto* ne = cast<CXXNewExpr>(e);
        if (const CXXConstructExpr* ce = ne->getConstructExpr()) {
          Id callee = type_callee(ne->getAllocatedType(), r);
          std::vector<Id> args;
          for (unsigned i = 0; i < ce->getNumArgs(); ++i)
            if (!isa<CXXDefaultArgExpr>(ce->getArg(i))) args.push_back(expr(const_cast<Expr*>(ce->getArg(i))));
          return b_.call(callee, args, r);
        }
        Id callee = type_callee(ne->getAllocatedType(), r);
        std::vector<Id> args;
        if (ne->getInitializer()) args.push_back(expr(const_cast<Expr*>(ne->getInitializer())));
        return b_.call(callee, args, r);
      }
      case Stmt::CXXDeleteExprClass:
        return b_.expr(ExprKind::Other, r, "delete", {expr(cast<CXXDeleteExpr>(e)->getArgument())});
      case Stmt::UnresolvedLookupExprClass: {
        auto* ul = cast<UnresolvedLookupExpr>(e);
        std::string name = ul->getName().getAsString();
        std::string qual;
        if (NestedNameSpecifier* nns = ul->getQualifier()) {
          llvm::raw_string_ostream os(qual);
          nns->print(os, policy_);
        }
        if (qual.empty()) {
          for (const NamedDecl* d : ul->decls())
            if (auto* fd = dyn_cast<FunctionDecl>(d->getUnderlyingDecl()))
              if (fd->getDefinition() && in_main(fd->getDefinition()->getLocation())) return b_.name(name, r);
          for (const NamedDecl* d : ul->decls()) return b_.qualified(qualified_name(d->getUnderlyingDecl()), r);
          return b_.name(name, r);
        }
        return b_.qualified(qual + name, r);
      }
      case Stmt::DependentScopeDeclRefExprClass: {
        auto* dd = cast<DependentScopeDeclRefExpr>(e);
        std::string qual;
        if (NestedNameSpecifier* nns = dd->getQualifier()) {
          llvm::raw_string_ostream os(qual);
          nns->print(os, policy_);
        }
        return b_.qualified(qual + dd->getDeclName().getAsString(), r);
      }
      case Stmt::CXXDependentScopeMemberExprClass: {
        auto* dm = cast<CXXDependentScopeMemberExpr>(e);
        Id obj = dm->isImplicitAccess() ? b_.name("self", r) : object(dm->getBase());
        return b_.attr(obj, dm->getMember().getAsString(), r);
      }
      case Stmt::UnresolvedMemberExprClass: {
        auto* um = cast<UnresolvedMemberExpr>(e);
        Id obj = um->isImplicitAccess() ? b_.name("self", r) : object(um->getBase());
        return b_.attr(obj, um->getMemberName().getAsString(), r);
      }
      case Stmt::CXXUnresolvedConstructExprClass: {
        auto* uc = cast<CXXUnresolvedConstructExpr>(e);
        Id callee = type_callee(uc->getTypeAsWritten(), r);
        std::vector<Id> args;
        for (Expr* a : uc->arguments()) args.push_back(expr(a));
        return b_.call(callee, args, r);
      }
      case Stmt::CXXDefaultArgExprClass:
      case Stmt::CXXDefaultInitExprClass:
        return b_.expr(ExprKind::Other, r);
      case Stmt::RecoveryExprClass: {
        // A member Clang could not look up because a missing header hid the class's bases
        // (`_model->zero_grad()` on a `torch::nn::Module` subclass): Clang keeps only the
        // object; the member's name is still in the source after it.
        auto* re = cast<RecoveryExpr>(e);
        if (re->subExpressions().size() == 1 && re->subExpressions()[0]) {
          Expr* base = re->subExpressions()[0];
          const Range br = rng(strip(base));
          if (br.end > r.begin && br.end <= r.end) {
            const std::string tail = text(b_.range(br.end, r.end));
            size_t i = 0;
            auto skip = [&] { while (i < tail.size() && std::isspace(static_cast<unsigned char>(tail[i]))) ++i; };
            skip();
            size_t op = tail.compare(i, 2, "->") == 0 ? 2 : (i < tail.size() && tail[i] == '.' ? 1 : 0);
            if (op) {
              i += op;
              skip();
              const size_t s = i;
              while (i < tail.size() && (std::isalnum(static_cast<unsigned char>(tail[i])) || tail[i] == '_')) ++i;
              const std::string member = tail.substr(s, i - s);
              skip();
              if (!member.empty() && !std::isdigit(static_cast<unsigned char>(member[0])) && i == tail.size())
                return b_.attr(object(base), member, r);
            }
          }
        }
        break;
      }
      default:
        break;
    }
    std::vector<Id> kids;
    for (Stmt* c : e->children())
      if (auto* ce = dyn_cast_or_null<Expr>(c)) kids.push_back(expr(ce));
    return b_.expr(ExprKind::Other, r, "", kids);
  }

  std::string text(const Range& r) const {
    if (r.end <= r.begin || r.end > b_.src.size()) return "";
    return std::string(b_.src.substr(r.begin, r.end - r.begin));
  }
};

}  // namespace

void lower_ast(ASTContext& ctx, std::string_view src, Module& m, std::vector<Diagnostic>& diags) {
  AstLowerer(ctx, src, m, diags).run();
}

}  // namespace ll::cpp
