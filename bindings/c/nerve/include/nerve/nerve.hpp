/*
 * nerve.hpp - a header-only C++17 wrapper of nerve.h's bus: RAII handles, lambdas as handlers, typed publish and
 * subscribe over generated C++ types (`nerve gen --cpp` or `lcm-gen --cpp`: any class with encode, decode,
 * getEncodedSize and getTypeName).
 *
 *   nerve::Bus bus("shm://");                                 // throws nerve::Error if it cannot open
 *   auto sub = bus.subscribe<exlcm::example_t>("EXAMPLE", [](const nerve::Message &m, const exlcm::example_t &v) {});
 *   bus.publish("EXAMPLE", value);
 *   bus.handle(std::chrono::milliseconds(100));                // true: a message was handled
 *
 * Errors: constructors and every call that fails throw nerve::Error (the status and nerve_last_error()'s text),
 * except destructors, which never throw. A Subscription ends when it is destroyed (or by unsubscribe()); it must
 * not outlive its Bus's use (ending it after the Bus closed is harmless). A typed handler is not called for a
 * message that does not decode as its type; such messages are counted (Subscription::decode_errors()).
 * Threads: as nerve.h (publish from any thread; handlers run inside handle() on the calling thread).
 */
#ifndef NERVE_NERVE_HPP
#define NERVE_NERVE_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nerve.h"

namespace nerve {

/** A failed call: its nerve.h status and the reason. */
class Error : public std::runtime_error {
  public:
    Error(int status, const std::string &what)
        : std::runtime_error(what + ": " + nerve_status_string(status) + ": " + nerve_last_error()), status_(status)
    {
    }
    int status() const noexcept { return status_; }

  private:
    int status_;
};

namespace detail {
inline int check(int status, const char *what)
{
    if (status < 0)
        throw Error(status, what);
    return status;
}
}  // namespace detail

/** One message as a handler sees it (valid during the handler call). */
struct Message {
    std::string_view channel;
    const void *data;
    size_t len;
    int64_t recv_utime;
    bool local;
};

enum class Overflow { DropOldest = NERVE_DROP_OLDEST, DropNewest = NERVE_DROP_NEWEST };

/** Counters of a subscription. */
using SubscriptionStats = nerve_subscription_stats;

/** A subscription; ends when destroyed. Move-only. */
class Subscription {
  public:
    Subscription() = default;
    Subscription(Subscription &&other) noexcept { *this = std::move(other); }
    Subscription &operator=(Subscription &&other) noexcept
    {
        if (this != &other) {
            reset();
            bus_ = std::exchange(other.bus_, nullptr);
            sub_ = std::exchange(other.sub_, nullptr);
            state_ = std::move(other.state_);
        }
        return *this;
    }
    Subscription(const Subscription &) = delete;
    Subscription &operator=(const Subscription &) = delete;
    ~Subscription() { reset(); }

    /** Ends it now. */
    void unsubscribe()
    {
        if (sub_)
            detail::check(nerve_bus_unsubscribe(bus_, std::exchange(sub_, nullptr)), "nerve_bus_unsubscribe");
        state_.reset();
    }

    SubscriptionStats stats() const
    {
        SubscriptionStats s{};
        detail::check(nerve_subscription_stats_get(sub_, &s), "nerve_subscription_stats_get");
        return s;
    }

    void set_capacity(size_t capacity)
    {
        detail::check(nerve_subscription_set_capacity(sub_, capacity), "nerve_subscription_set_capacity");
    }

    /** Messages a typed handler was not given because they did not decode as its type. */
    uint64_t decode_errors() const { return state_ ? state_->decode_errors.load() : 0; }

    nerve_subscription *get() const noexcept { return sub_; }

  private:
    friend class Bus;
    struct State {
        std::function<void(const Message &)> fn;
        std::atomic<uint64_t> decode_errors{0};
    };

    void reset() noexcept
    {
        if (sub_)
            nerve_bus_unsubscribe(bus_, sub_);  // a closed bus already ended it: the error is of no interest
        sub_ = nullptr;
        state_.reset();
    }

    static void trampoline(const nerve_received *m, void *user)
    {
        State *state = static_cast<State *>(user);
        Message msg{std::string_view(m->channel), m->data, m->len, m->recv_utime, m->local != 0};
        state->fn(msg);
    }

    nerve_bus *bus_ = nullptr;
    nerve_subscription *sub_ = nullptr;
    std::unique_ptr<State> state_;
};

/** A bus; closes when destroyed. Move-only. */
class Bus {
  public:
    /** Opens a bus on @p url ("" for the default); throws Error. */
    explicit Bus(const std::string &url = "")
    {
        detail::check(nerve_bus_open(url.empty() ? nullptr : url.c_str(), &bus_), "nerve_bus_open");
    }
    Bus(Bus &&other) noexcept : bus_(std::exchange(other.bus_, nullptr)) {}
    Bus &operator=(Bus &&other) noexcept
    {
        if (this != &other) {
            close();
            bus_ = std::exchange(other.bus_, nullptr);
        }
        return *this;
    }
    Bus(const Bus &) = delete;
    Bus &operator=(const Bus &) = delete;
    ~Bus() { close(); }

    void publish(const std::string &channel, const void *data, size_t len)
    {
        detail::check(nerve_bus_publish(bus_, channel.c_str(), data, len), "nerve_bus_publish");
    }

    /** Encodes @p msg (a generated type) and publishes it. */
    template <class T>
    void publish(const std::string &channel, const T &msg)
    {
        int size = msg.getEncodedSize();
        std::vector<uint8_t> buf(static_cast<size_t>(size > 0 ? size : 0) + 1);
        if (size < 0 || msg.encode(buf.data(), 0, size) < 0)
            throw Error(NERVE_E_INVALID, std::string("encoding ") + T::getTypeName());
        publish(channel, buf.data(), static_cast<size_t>(size));
    }

    /** Calls @p fn with every message on a channel @p pattern matches. */
    Subscription subscribe(const std::string &pattern, std::function<void(const Message &)> fn,
                           size_t capacity = 30, Overflow overflow = Overflow::DropOldest)
    {
        Subscription s;
        s.state_ = std::make_unique<Subscription::State>();
        s.state_->fn = std::move(fn);
        detail::check(nerve_bus_subscribe(bus_, pattern.c_str(), capacity, static_cast<int>(overflow),
                                          &Subscription::trampoline, s.state_.get(), &s.sub_),
                      "nerve_bus_subscribe");
        s.bus_ = bus_;
        return s;
    }

    /** Calls @p fn with every message on a channel @p pattern matches, decoded as T. */
    template <class T>
    Subscription subscribe(const std::string &pattern, std::function<void(const Message &, const T &)> fn,
                           size_t capacity = 30, Overflow overflow = Overflow::DropOldest)
    {
        Subscription s = subscribe(pattern, nullptr, capacity, overflow);
        Subscription::State *state = s.state_.get();
        state->fn = [fn = std::move(fn), state](const Message &m) {
            T value;
            if (value.decode(m.data, 0, static_cast<int>(m.len)) < 0) {
                state->decode_errors++;
                return;
            }
            fn(m, value);
        };
        return s;
    }

    /** Waits for one message and runs its handlers. */
    void handle() { detail::check(nerve_bus_handle(bus_), "nerve_bus_handle"); }

    /** Like handle(), waiting at most @p timeout: true when a message was handled. */
    bool handle(std::chrono::nanoseconds timeout)
    {
        return detail::check(nerve_bus_handle_timeout(bus_, timeout.count()), "nerve_bus_handle_timeout") == NERVE_OK;
    }

    /** A descriptor readable while a message waits for handle(). */
    int fileno()
    {
        int fd = -1;
        detail::check(nerve_bus_fileno(bus_, &fd), "nerve_bus_fileno");
        return fd;
    }

    nerve_bus *get() const noexcept { return bus_; }

  private:
    void close() noexcept
    {
        if (bus_)
            nerve_bus_close(std::exchange(bus_, nullptr));
    }

    nerve_bus *bus_ = nullptr;
};

}  // namespace nerve

#endif
