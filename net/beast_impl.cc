// Boost.Asio, Asio's SSL layer and Beast compiled once for the whole program (their
// *_SEPARATE_COMPILATION macros are public compile definitions of gleaner_beast), instead of
// being re-instantiated in every translation unit that includes them.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
