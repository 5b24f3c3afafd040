// opt_lite: a small `opt -O2 -S` on LLVM 14, the C++ corpus of `cargo xtask bench`.
//
// Parses the LLVM IR file named on the command line, runs the new pass
// manager's per-module O2 pipeline and prints the optimized module to stdout.
// Linked statically against Debian's llvm-14-dev archives, it pulls in most of
// LLVM's analyses and transforms: a large, template-heavy C++ link.
#include <memory>

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: " << argv[0] << " FILE.ll\n";
    return 2;
  }
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module =
      llvm::parseIRFile(argv[1], diagnostic, context);
  if (!module) {
    diagnostic.print(argv[0], llvm::errs());
    return 1;
  }

  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);

  llvm::ModulePassManager pipeline =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  pipeline.run(*module, modules);

  if (llvm::verifyModule(*module, &llvm::errs())) {
    llvm::errs() << argv[0] << ": the optimized module does not verify\n";
    return 1;
  }
  module->print(llvm::outs(), nullptr);
  return 0;
}
