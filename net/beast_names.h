#pragma once
// The Boost.Asio / Beast vocabulary of every HTTP client and server of the project, spelled
// once: the coroutine-side headers and short names for their namespaces. A file that also
// speaks TLS includes <boost/asio/ssl.hpp> and <boost/beast/ssl.hpp> itself.

#include <string_view>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace gleaner::net::beast_names {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

// A Beast string (a header value, a target) as a std::string_view.
inline std::string_view view(beast::string_view s) {
  return {s.data(), s.size()};
}

}  // namespace gleaner::net::beast_names
