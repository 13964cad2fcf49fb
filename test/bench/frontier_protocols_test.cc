// The frontier benchmark's wire framing: where each service's responses end, partial reads,
// error replies, and bytes that are no response at all.
#include <gtest/gtest.h>

#include "bench/frontier/protocols.h"

namespace gleaner::bench::frontier {
namespace {

TEST(FrontierProtocols, MemcachedFramesValuesMissesAndStores) {
  auto p = memcached_protocol(100);
  const std::string value = "VALUE k1 0 3\r\nabc\r\nEND\r\n";
  EXPECT_EQ(p->response_end(value), value.size());
  EXPECT_EQ(p->response_end(value + "END\r\n"), value.size());  // the next one is not counted
  EXPECT_EQ(p->response_end(value.substr(0, 10)), 0u);          // partial
  EXPECT_EQ(p->response_end(value.substr(0, 20)), 0u);
  EXPECT_EQ(p->response_end("END\r\n"), 5u);
  EXPECT_EQ(p->response_end("STORED\r\n"), 8u);
  EXPECT_EQ(p->response_end("HTTP/1.1 200 OK\r\n"), std::nullopt);
  EXPECT_TRUE(p->failed("SERVER_ERROR out of memory\r\n"));
  EXPECT_FALSE(p->failed("STORED\r\n"));
  // Requests: nine gets then a set of a 256-byte value; preloads are sets.
  EXPECT_EQ(p->request(0, 1).rfind("get k", 0), 0u);
  EXPECT_EQ(p->request(9, 1).rfind("set k", 0), 0u);
  EXPECT_NE(p->request(9, 1).find(std::string(256, 'v') + "\r\n"), std::string::npos);
  EXPECT_EQ(p->preload_keys(), 100u);
  // A preload batch stops at the end of the key space: k95 .. k99.
  const std::string batch = p->preload(95, 10);
  size_t sets = 0;
  for (size_t at = batch.find("set k"); at != std::string::npos; at = batch.find("set k", at + 1))
    ++sets;
  EXPECT_EQ(sets, 5u);
  EXPECT_NE(batch.find("set k99 "), std::string::npos);
}

TEST(FrontierProtocols, RedisFramesBulkNilStatusAndErrors) {
  auto p = redis_protocol(100);
  EXPECT_EQ(p->response_end("$3\r\nabc\r\n"), 9u);
  EXPECT_EQ(p->response_end("$3\r\nab"), 0u);
  EXPECT_EQ(p->response_end("$-1\r\n"), 5u);
  EXPECT_EQ(p->response_end("+OK\r\n+OK\r\n"), 5u);
  EXPECT_EQ(p->response_end("-ERR wrong\r\n"), 12u);
  EXPECT_TRUE(p->failed("-ERR wrong\r\n"));
  EXPECT_EQ(p->response_end("?what\r\n"), std::nullopt);
  EXPECT_EQ(p->request(0, 1).rfind("*2\r\n$3\r\nGET\r\n", 0), 0u);
  EXPECT_EQ(p->request(9, 1).rfind("*3\r\n$3\r\nSET\r\n", 0), 0u);
}

TEST(FrontierProtocols, HttpFramesByLengthOrChunks) {
  auto p = http_protocol(10);
  const std::string sized = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd";
  EXPECT_EQ(p->response_end(sized), sized.size());
  EXPECT_EQ(p->response_end(sized.substr(0, sized.size() - 1)), 0u);
  const std::string chunked =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
      "chunked\r\n\r\n4\r\nabcd\r\na\r\n0123456789\r\n0\r\n\r\n";
  EXPECT_EQ(p->response_end(chunked), chunked.size());
  EXPECT_EQ(p->response_end(chunked.substr(0, chunked.size() - 2)), 0u);
  EXPECT_EQ(p->response_end("HTTP/1.1 200 OK\r\nServer: x\r\n\r\n"), std::nullopt);  // unframed
  EXPECT_TRUE(p->failed("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_EQ(p->request(0, 1).rfind("GET /static ", 0), 0u);
  EXPECT_EQ(p->request(9, 1).rfind("GET /cpu ", 0), 0u);
}

}  // namespace
}  // namespace gleaner::bench::frontier
