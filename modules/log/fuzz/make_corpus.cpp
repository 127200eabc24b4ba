// modules/log/fuzz/make_corpus.cpp — writes the seed corpus of fuzz_log_segment: a few valid
// segments (empty, small, several terms, after compaction) and a torn one. Run by hand:
//   log_make_corpus modules/log/fuzz/corpus_log_segment
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "queen/log/format.hpp"

namespace {

using namespace queen;
using namespace queen::log;

Bytes segment(LogIndex first, Term prev_term, std::uint64_t count, std::uint64_t term_every) {
    Bytes out(segment_header_size);
    SegmentHeader header;
    header.first_index = first;
    header.prev_term = prev_term;
    encode_segment_header(header, out);
    Term term = prev_term.value() == 0 ? Term{1} : prev_term;
    for (std::uint64_t i = 0; i < count; ++i) {
        if (term_every != 0 && i != 0 && i % term_every == 0) {
            term = term.next();
        }
        std::string payload = "record " + std::to_string(first.value() + i);
        payload.append(i % 7, 'x');
        encode_record(out, term, LogIndex{first.value() + i}, static_cast<RecordType>(i % 3),
                      as_bytes(payload));
    }
    return out;
}

void write(const std::filesystem::path& path, const Bytes& bytes) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: log_make_corpus DIR\n");
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    write(dir / "empty.seg", segment(LogIndex{1}, Term{0}, 0, 0));
    write(dir / "three.seg", segment(LogIndex{1}, Term{0}, 3, 0));
    write(dir / "terms.seg", segment(LogIndex{1}, Term{0}, 12, 4));
    write(dir / "compacted.seg", segment(LogIndex{1001}, Term{5}, 5, 2));
    Bytes torn = segment(LogIndex{1}, Term{0}, 4, 0);
    torn.resize(torn.size() - 5);
    write(dir / "torn.seg", torn);
    return 0;
}
