# cmake/QueenModule.cmake — helpers that give every module the same shape: queen::<name>, its tests.

# Flags shared by every queen target (not by third-party code).
add_library(queen_flags INTERFACE)
target_compile_options(queen_flags INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
  -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
if(QUEEN_WERROR)
  target_compile_options(queen_flags INTERFACE -Werror)
endif()
# gcc 12 at -O3 (CMAKE_BUILD_TYPE=Release) reports false -Wrestrict on std::string's
# operator+ inside libstdc++ (gcc bug 105329), in many files; the other build types do not.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(queen_flags INTERFACE -Wno-restrict)
endif()
if(QUEEN_SANITIZE STREQUAL "address")
  target_compile_options(queen_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=undefined)
  target_link_options(queen_flags INTERFACE -fsanitize=address,undefined)
  # gcc 12 reports a -Wmaybe-uninitialized false positive inside <regex> (via Catch2) under ASan.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(queen_flags INTERFACE -Wno-maybe-uninitialized)
  endif()
elseif(QUEEN_SANITIZE STREQUAL "thread")
  target_compile_options(queen_flags INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(queen_flags INTERFACE -fsanitize=thread)
elseif(NOT QUEEN_SANITIZE STREQUAL "")
  message(FATAL_ERROR "QUEEN_SANITIZE must be '', 'address' or 'thread'")
endif()

# queen_module(<name> LAYER <n> [DEPS mod...] [PRIVATE_LIBS lib...] [PUBLIC_LIBS lib...])
# Creates the library queen_<name> (alias queen::<name>) from modules/<name>/src/*.cpp (INTERFACE
# when there are none), and one Catch2 test executable from modules/<name>/tests/*.cpp.
# DEPS are other queen modules; tools/check_layers.py reads this call to enforce the layering.
function(queen_module name)
  cmake_parse_arguments(M "" "LAYER" "DEPS;PRIVATE_LIBS;PUBLIC_LIBS;TEST_LIBS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
  set(deps "")
  foreach(d IN LISTS M_DEPS)
    list(APPEND deps queen::${d})
  endforeach()
  if(sources)
    add_library(queen_${name} STATIC ${sources})
    target_include_directories(queen_${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
      PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
    target_link_libraries(queen_${name} PUBLIC ${deps} ${M_PUBLIC_LIBS} PRIVATE queen_flags
      ${M_PRIVATE_LIBS})
  else()
    add_library(queen_${name} INTERFACE)
    target_include_directories(queen_${name} INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_link_libraries(queen_${name} INTERFACE ${deps} ${M_PUBLIC_LIBS})
  endif()
  add_library(queen::${name} ALIAS queen_${name})
  set_property(GLOBAL APPEND PROPERTY QUEEN_MODULES ${name})

  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/*.cpp)
  if(tests AND BUILD_TESTING)
    add_executable(${name}_tests ${tests})
    target_include_directories(${name}_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
    target_link_libraries(${name}_tests PRIVATE queen::${name} queen::testing queen_flags
      ${M_PRIVATE_LIBS} ${M_TEST_LIBS})
    catch_discover_tests(${name}_tests PROPERTIES LABELS ${name}
      ENVIRONMENT "QUEEN_BUILD_DIR=${CMAKE_BINARY_DIR}")
  endif()
endfunction()

# Fuzzing: every queen target is instrumented; queen_fuzzer() adds one libFuzzer executable.
add_custom_target(fuzzers)
if(QUEEN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "QUEEN_FUZZ needs clang (CXX=clang++-14)")
  endif()
  target_compile_options(queen_flags INTERFACE -fsanitize=fuzzer-no-link,address,undefined
    -fno-omit-frame-pointer)
  target_link_options(queen_flags INTERFACE -fsanitize=address,undefined)
endif()

# queen_fuzzer(<name> SOURCES file... DEPS mod... [CORPUS dir])
# Builds fuzz_<name> when QUEEN_FUZZ is on. tools/run_fuzzers.sh runs every fuzz_* binary with its
# corpus directory (CORPUS, default <module>/fuzz/corpus_<name>) for a bounded time.
function(queen_fuzzer name)
  cmake_parse_arguments(F "" "CORPUS" "SOURCES;DEPS;LIBS" ${ARGN})
  if(NOT QUEEN_FUZZ)
    return()
  endif()
  set(deps "")
  foreach(d IN LISTS F_DEPS)
    list(APPEND deps queen::${d})
  endforeach()
  add_executable(fuzz_${name} ${F_SOURCES})
  target_link_libraries(fuzz_${name} PRIVATE ${deps} ${F_LIBS} queen_flags)
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  set_target_properties(fuzz_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  if(NOT F_CORPUS)
    set(F_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_${name})
  endif()
  file(WRITE ${CMAKE_BINARY_DIR}/fuzz/fuzz_${name}.corpus "${F_CORPUS}\n")
  add_dependencies(fuzzers fuzz_${name})
endfunction()
