# ignis_layer(NAME DEPS...): a static library from every .cpp in the current folder
# (recursively), except *_test.cpp and ISA-specific files, which are added with their own flags.
function(ignis_layer name)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  list(FILTER srcs EXCLUDE REGEX "_test\\.cpp$")
  list(FILTER srcs EXCLUDE REGEX "/main\\.cpp$")
  set(avx2 ${srcs})
  list(FILTER avx2 INCLUDE REGEX "_avx2\\.cpp$")
  set(avxvnni ${srcs})
  list(FILTER avxvnni INCLUDE REGEX "_avxvnni\\.cpp$")
  set(avx512 ${srcs})
  list(FILTER avx512 INCLUDE REGEX "_avx512\\.cpp$")
  set(amx ${srcs})
  list(FILTER amx INCLUDE REGEX "_amx\\.cpp$")
  set_source_files_properties(${amx} PROPERTIES COMPILE_OPTIONS
    "-mavx2;-mfma;-mf16c;-mbmi2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx512bf16;-mavx512vbmi;-mgfni;-mamx-tile;-mamx-int8;-mamx-bf16")
  set_source_files_properties(${avx2} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mbmi2")
  set_source_files_properties(${avxvnni} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mbmi2;-mavxvnni")
  set_source_files_properties(${avx512} PROPERTIES COMPILE_OPTIONS
    "-mavx2;-mfma;-mf16c;-mbmi2;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx512bf16;-mavx512vbmi;-mgfni")
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_link_libraries(${name} PUBLIC ${ARGN})
  else()
    # A layer with no sources yet is header-only until its first .cpp lands.
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${ARGN})
  endif()
endfunction()
