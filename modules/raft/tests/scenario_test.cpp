// modules/raft/tests/scenario_test.cpp — runs the data-driven scenarios in tests/testdata/*.txt;
// QUEEN_REWRITE=1 regenerates their expected output for review.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "interaction_env.hpp"
#include "queen/testing/catch.hpp"

namespace {

struct Block {
    std::vector<std::string> comments;  // lines before the command (kept on rewrite)
    std::string command_line;
    std::string expected;
    int line = 0;
};

std::vector<Block> parse(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<Block> blocks;
    std::string line;
    Block current;
    int line_number = 0;
    enum { before, in_output } state = before;
    while (std::getline(in, line)) {
        line_number += 1;
        if (state == before) {
            if (line.empty() || line[0] == '#') {
                current.comments.push_back(line);
            } else if (line == "----") {
                state = in_output;
            } else {
                current.command_line = line;
                current.line = line_number;
            }
        } else if (line.empty()) {
            blocks.push_back(std::move(current));
            current = Block{};
            state = before;
        } else {
            current.expected += line + "\n";
        }
    }
    if (!current.command_line.empty()) {
        blocks.push_back(std::move(current));
    }
    return blocks;
}

std::vector<std::string> split(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> words;
    std::string word;
    while (in >> word) {
        words.push_back(word);
    }
    return words;
}

}  // namespace

TEST_CASE("raft: scenario files produce their expected traces", "[raft][scenario]") {
    const std::filesystem::path dir = QUEEN_RAFT_TESTDATA;
    std::vector<std::filesystem::path> files;
    for (const auto& item : std::filesystem::directory_iterator(dir)) {
        if (item.path().extension() == ".txt") {
            files.push_back(item.path());
        }
    }
    std::sort(files.begin(), files.end());
    REQUIRE(files.size() >= 6);
    const char* rewrite_env = std::getenv("QUEEN_REWRITE");
    const bool rewrite = rewrite_env != nullptr && std::string(rewrite_env) == "1";
    for (const auto& file : files) {
        DYNAMIC_SECTION(file.filename().string()) {
            queen::raft::testing::InteractionEnv env;
            std::vector<Block> blocks = parse(file);
            REQUIRE_FALSE(blocks.empty());
            std::ostringstream rewritten;
            for (Block& block : blocks) {
                const std::vector<std::string> words = split(block.command_line);
                const std::vector<std::string> args(words.begin() + 1, words.end());
                const std::string actual = env.run(words.front(), args);
                for (const std::string& c : block.comments) {
                    rewritten << c << "\n";
                }
                rewritten << block.command_line << "\n----\n" << actual << "\n";
                if (!rewrite) {
                    INFO(file.filename().string()
                         << ":" << block.line << ": " << block.command_line);
                    CHECK(actual == block.expected);
                }
            }
            if (rewrite) {
                std::string text = rewritten.str();
                text.pop_back();  // no blank line at the end of the file
                std::ofstream(file) << text;
            }
        }
    }
}
