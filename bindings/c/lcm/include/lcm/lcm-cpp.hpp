/*
 * lcm/lcm-cpp.hpp (Nerve's liblcm): LCM 1.5.3's C++ API, header-only over lcm/lcm.h, with lcm-cpp's classes and
 * member functions: lcm::LCM, lcm::Subscription, lcm::ReceiveBuffer, lcm::LogFile, lcm::LogEvent. Typed
 * subscriptions decode with the message class's decode() (classes from lcm-gen --cpp or nerve gen --cpp); a message
 * that does not decode is reported on stderr and not handed to the handler, as lcm-cpp does. Needs C++11.
 *
 * Ownership: an LCM owns the lcm_t it created (not one passed in) and every Subscription it returned; unsubscribe()
 * or the LCM's destructor frees them. A handler's rbuf and msg are valid only during the call. Threads: as lcm.h.
 */
#ifndef NERVE_LIBLCM_CPP_HPP
#define NERVE_LIBLCM_CPP_HPP

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "lcm.h"

namespace lcm {

/* What a C++ handler is told about the message it handles. */
struct ReceiveBuffer {
    void *data;
    uint32_t data_size;
    int64_t recv_utime;
};

class LCM;

/* One subscription; made by LCM::subscribe*, freed by LCM::unsubscribe or the LCM's destructor. */
class Subscription {
  public:
    virtual ~Subscription() {}

    /* Caps the queue (0 or less: unbounded); 0, or -1 on error. */
    inline int setQueueCapacity(int num_messages)
    {
        return lcm_subscription_set_queue_capacity(c_subs, num_messages);
    }

    /* Messages waiting in the queue, or -1. */
    inline int getQueueSize() const { return lcm_subscription_get_queue_size(c_subs); }

    friend class LCM;

  protected:
    Subscription() : c_subs(NULL) { channel_buf.reserve(LCM_MAX_CHANNEL_NAME_LENGTH); }
    lcm_subscription_t *c_subs;
    std::string channel_buf;

  private:
    /* How every kind of handler is called: with the buffer and the channel as C++ gives them. */
    std::function<void(const ReceiveBuffer *, const std::string &)> call;

    static void trampoline(const lcm_recv_buf_t *rbuf, const char *channel, void *user)
    {
        Subscription *self = static_cast<Subscription *>(user);
        ReceiveBuffer buf;
        buf.data = rbuf->data;
        buf.data_size = rbuf->data_size;
        buf.recv_utime = rbuf->recv_utime;
        self->channel_buf.assign(channel);
        self->call(&buf, self->channel_buf);
    }
};

/* An LCM instance. */
class LCM {
  public:
    /* An instance on `lcm_url` ("" for the default); check good(). */
    inline LCM(std::string lcm_url = "") : lcm(lcm_create(lcm_url.empty() ? NULL : lcm_url.c_str())), owns_lcm(true)
    {
    }

    /* Wraps an existing lcm_t, which the caller keeps owning. */
    inline LCM(lcm_t *lcm_in) : lcm(lcm_in), owns_lcm(false) {}

    inline ~LCM()
    {
        for (size_t i = 0; i < subscriptions.size(); i++) {
            lcm_unsubscribe(lcm, subscriptions[i]->c_subs);
            delete subscriptions[i];
        }
        if (owns_lcm && lcm)
            lcm_destroy(lcm);
    }

    /* Whether the instance was created. */
    inline bool good() const { return lcm != NULL; }

    inline int publish(const std::string &channel, const void *data, unsigned int datalen)
    {
        if (!lcm) {
            fprintf(stderr, "LCM instance not initialized. Ignoring call to publish()\n");
            return -1;
        }
        return lcm_publish(lcm, channel.c_str(), data, datalen);
    }

    /* Encodes `msg` and publishes it. */
    template <class MessageType>
    inline int publish(const std::string &channel, const MessageType *msg)
    {
        int size = msg->getEncodedSize();
        if (size < 0)
            return -1;
        std::vector<uint8_t> buf(static_cast<size_t>(size) + 1);
        if (msg->encode(buf.data(), 0, size) < 0)
            return -1;
        return publish(channel, buf.data(), static_cast<unsigned int>(size));
    }

    inline int getFileno() { return lcm ? lcm_get_fileno(lcm) : -1; }
    inline int handle() { return lcm ? lcm_handle(lcm) : -1; }
    inline int handleTimeout(int timeout_millis) { return lcm ? lcm_handle_timeout(lcm, timeout_millis) : -1; }

    /* A member function handling decoded messages. */
    template <class MessageType, class MessageHandlerClass>
    Subscription *subscribe(const std::string &channel,
                            void (MessageHandlerClass::*handlerMethod)(const ReceiveBuffer *rbuf,
                                                                       const std::string &channel,
                                                                       const MessageType *msg),
                            MessageHandlerClass *handler)
    {
        return add(channel, typed<MessageType>([handlerMethod, handler](const ReceiveBuffer *rbuf,
                                                                        const std::string &chan,
                                                                        const MessageType *msg) {
                       (handler->*handlerMethod)(rbuf, chan, msg);
                   }));
    }

    /* A member function handling raw messages. */
    template <class MessageHandlerClass>
    Subscription *subscribe(const std::string &channel,
                            void (MessageHandlerClass::*handlerMethod)(const ReceiveBuffer *rbuf,
                                                                       const std::string &channel),
                            MessageHandlerClass *handler)
    {
        return add(channel, [handlerMethod, handler](const ReceiveBuffer *rbuf, const std::string &chan) {
            (handler->*handlerMethod)(rbuf, chan);
        });
    }

    /* A function with a context value, handling decoded messages. */
    template <class MessageType, class ContextClass>
    Subscription *subscribeFunction(const std::string &channel,
                                    void (*handler)(const ReceiveBuffer *rbuf, const std::string &channel,
                                                    const MessageType *msg, ContextClass context),
                                    ContextClass context)
    {
        return add(channel, typed<MessageType>([handler, context](const ReceiveBuffer *rbuf, const std::string &chan,
                                                                  const MessageType *msg) {
                       handler(rbuf, chan, msg, context);
                   }));
    }

    /* A function with a context value, handling raw messages. */
    template <class ContextClass>
    Subscription *subscribeFunction(const std::string &channel,
                                    void (*handler)(const ReceiveBuffer *rbuf, const std::string &channel,
                                                    ContextClass context),
                                    ContextClass context)
    {
        return add(channel, [handler, context](const ReceiveBuffer *rbuf, const std::string &chan) {
            handler(rbuf, chan, context);
        });
    }

    template <class MessageType>
    using HandlerFunction =
        std::function<void(const ReceiveBuffer *rbuf, const std::string &channel, const MessageType *msg)>;

    /* A lambda (or any callable) handling decoded messages. */
    template <class MessageType>
    Subscription *subscribe(const std::string &channel, HandlerFunction<MessageType> handler)
    {
        return add(channel, typed<MessageType>(handler));
    }

    /* Ends and frees a subscription made by this LCM; 0, or -1 on error. */
    inline int unsubscribe(Subscription *subscription)
    {
        if (!lcm) {
            fprintf(stderr, "LCM instance not initialized. Ignoring call to unsubscribe()\n");
            return -1;
        }
        for (size_t i = 0; i < subscriptions.size(); i++) {
            if (subscriptions[i] == subscription) {
                int status = lcm_unsubscribe(lcm, subscription->c_subs);
                if (status == 0) {
                    subscriptions.erase(subscriptions.begin() + static_cast<long>(i));
                    delete subscription;
                }
                return status;
            }
        }
        return -1;
    }

    /* The lcm_t inside. */
    inline lcm_t *getUnderlyingLCM() { return lcm; }

  private:
    lcm_t *lcm;
    bool owns_lcm;
    std::vector<Subscription *> subscriptions;

    LCM(const LCM &);
    LCM &operator=(const LCM &);

    /* A raw handler that decodes into MessageType first. */
    template <class MessageType>
    static std::function<void(const ReceiveBuffer *, const std::string &)> typed(HandlerFunction<MessageType> handler)
    {
        return [handler](const ReceiveBuffer *rbuf, const std::string &chan) {
            MessageType msg;
            int status = msg.decode(rbuf->data, 0, static_cast<int>(rbuf->data_size));
            if (status < 0) {
                fprintf(stderr, "error %d decoding %s!!!\n", status, MessageType::getTypeName());
                return;
            }
            handler(rbuf, chan, &msg);
        };
    }

    Subscription *add(const std::string &channel, std::function<void(const ReceiveBuffer *, const std::string &)> fn)
    {
        if (!lcm) {
            fprintf(stderr, "LCM instance not initialized. Ignoring call to subscribe()\n");
            return NULL;
        }
        Subscription *sub = new Subscription();
        sub->call = fn;
        sub->c_subs = lcm_subscribe(lcm, channel.c_str(), &Subscription::trampoline, sub);
        if (!sub->c_subs) {
            delete sub;
            return NULL;
        }
        subscriptions.push_back(sub);
        return sub;
    }
};

/* One event of a log file. */
struct LogEvent {
    int64_t eventnum;
    int64_t timestamp;
    std::string channel;
    int32_t datalen;
    void *data;
};

/* An LCM log file, read or written event by event. */
class LogFile {
  public:
    /* Opens `path` with mode "r", "w" or "a"; check good(). */
    inline LogFile(const std::string &path, const std::string &mode)
        : eventlog(lcm_eventlog_create(path.c_str(), mode.c_str())), last_event(NULL)
    {
        curEvent.eventnum = 0;
        curEvent.timestamp = 0;
        curEvent.datalen = 0;
        curEvent.data = NULL;
    }

    inline ~LogFile()
    {
        if (last_event)
            lcm_eventlog_free_event(last_event);
        if (eventlog)
            lcm_eventlog_destroy(eventlog);
    }

    inline bool good() const { return eventlog != NULL; }

    /* The next event (valid until the next call), or NULL at the end. */
    inline const LogEvent *readNextEvent()
    {
        if (last_event)
            lcm_eventlog_free_event(last_event);
        last_event = eventlog ? lcm_eventlog_read_next_event(eventlog) : NULL;
        if (!last_event)
            return NULL;
        curEvent.eventnum = last_event->eventnum;
        curEvent.timestamp = last_event->timestamp;
        curEvent.channel.assign(last_event->channel, static_cast<size_t>(last_event->channellen));
        curEvent.datalen = last_event->datalen;
        curEvent.data = last_event->data;
        return &curEvent;
    }

    inline int seekToTimestamp(int64_t timestamp)
    {
        return eventlog ? lcm_eventlog_seek_to_timestamp(eventlog, timestamp) : -1;
    }

    /* Appends `event` (numbered by the log); 0, or -1 on error. */
    inline int writeEvent(LogEvent *event)
    {
        lcm_eventlog_event_t e;
        e.eventnum = event->eventnum;
        e.timestamp = event->timestamp;
        e.channellen = static_cast<int32_t>(event->channel.size());
        e.datalen = event->datalen;
        e.channel = const_cast<char *>(event->channel.c_str());
        e.data = event->data;
        return eventlog ? lcm_eventlog_write_event(eventlog, &e) : -1;
    }

    inline FILE *getFilePtr() { return eventlog ? eventlog->f : NULL; }

  private:
    LogEvent curEvent;
    lcm_eventlog_t *eventlog;
    lcm_eventlog_event_t *last_event;

    LogFile(const LogFile &);
    LogFile &operator=(const LogFile &);
};

}  // namespace lcm

#endif
