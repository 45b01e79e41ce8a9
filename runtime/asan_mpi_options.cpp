// AddressSanitizer defaults of the MPI executables (topocoll-bench, mpi_fault_probe), linked into
// them in an ASan build only (TOPOCOLL_SANITIZE, CMakeLists.txt). Open MPI unloads its components
// in MPI_Finalize, so a block one of them still holds is reported from "<unknown module>" and the
// frame-pointer unwinder stops there; a full unwind on every allocation reaches libmpi /
// libopen-rte, which scripts/sanitizers/lsan.supp names. ASAN_OPTIONS overrides it when it sets
// fast_unwind_on_malloc itself (tools/test_lib.sh's mpi_launcher does, for the ranks it starts
// without the leak check).
extern "C" const char* __asan_default_options() {
  return "fast_unwind_on_malloc=0";
}
