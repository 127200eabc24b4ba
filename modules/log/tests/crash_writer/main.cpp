// modules/log/tests/crash_writer/main.cpp — test helper: appends with group commit from several
// threads and prints each durably acknowledged index on stdout (one line each), until killed.
// Usage: log_crash_writer DIR THREADS SEGMENT_BYTES
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "payload.hpp"
#include "queen/log/log.hpp"

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: log_crash_writer DIR THREADS SEGMENT_BYTES\n");
        return 2;
    }
    const std::string dir = argv[1];
    const int threads = std::atoi(argv[2]);
    queen::log::Options options;
    options.segment_size_bytes_max = std::strtoull(argv[3], nullptr, 0);
    options.record_size_bytes_max = 4096;
    options.pending_bytes_max = 1u << 20;
    auto opened = queen::log::Log::open(dir, options);
    if (!opened) {
        std::fprintf(stderr, "log_crash_writer: open: %s\n", opened.error().message().c_str());
        return 1;
    }
    queen::log::Log& log = **opened;
    std::mutex append_mutex;  // picks the next index and queues its record atomically
    std::mutex out_mutex;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
            for (;;) {
                queen::log::AppendTicket ticket;
                {
                    std::lock_guard lock(append_mutex);
                    const std::uint64_t index = log.last_index().value() + 1;
                    const queen::Bytes payload = queen::log::testing::crash_payload(index);
                    const queen::log::RecordView record{
                        queen::Term{queen::log::testing::crash_term(index)}, queen::LogIndex{index},
                        static_cast<queen::log::RecordType>(index % 5), payload};
                    auto appended = log.append(std::span(&record, 1));
                    if (!appended) {
                        std::fprintf(stderr, "log_crash_writer: append: %s\n",
                                     appended.error().message().c_str());
                        std::_Exit(1);
                    }
                    ticket = *appended;
                }
                if (auto status = log.wait_durable(ticket); !status) {
                    std::fprintf(stderr, "log_crash_writer: wait: %s\n",
                                 status.error().message().c_str());
                    std::_Exit(1);
                }
                // Print only after the fdatasync: the parent treats every line as a promise.
                std::lock_guard lock(out_mutex);
                std::printf("%llu\n", static_cast<unsigned long long>(ticket.last_index.value()));
                std::fflush(stdout);
            }
        });
    }
    for (auto& worker : workers) {
        worker.join();
    }
    return 0;
}
