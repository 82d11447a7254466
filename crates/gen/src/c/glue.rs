//! lcm-gen's publish/subscribe glue over `<lcm/lcm.h>` (`--c-no-pubsub` leaves it out).

/// lcm-gen's publish/subscribe declarations for C type `name` (its comments, its signatures).
pub(super) fn pubsub_declarations(name: &str) -> String {
    format!(
        "/**
 * Identifies a single subscription.  This is an opaque data type.
 */
typedef struct _{name}_subscription_t {name}_subscription_t;

/**
 * Prototype for a callback function invoked when a message of type
 * {name} is received.
 */
typedef void(*{name}_handler_t)(
    const lcm_recv_buf_t *rbuf, const char *channel,
    const {name} *msg, void *userdata);

/**
 * Publish a message of type {name} using LCM.
 *
 * @param lcm The LCM instance to publish with.
 * @param channel The channel to publish on.
 * @param msg The message to publish.
 * @return 0 on success, <0 on error.  Success means LCM has transferred
 * responsibility of the message data to the OS.
 */
int {name}_publish(lcm_t *lcm, const char *channel, const {name} *msg);

/**
 * Subscribe to messages of type {name} using LCM.
 *
 * @param lcm The LCM instance to subscribe with.
 * @param channel The channel to subscribe to.
 * @param handler The callback function invoked by LCM when a message is
 *     received. This function is invoked by LCM during calls to lcm_handle()
 *     and lcm_handle_timeout(). The message is valid only during the call.
 * @param userdata An opaque pointer passed to @p handler when it is invoked.
 * @return the subscription, or NULL if an error occured
 */
{name}_subscription_t* {name}_subscribe(
    lcm_t *lcm, const char *channel, {name}_handler_t handler, void *userdata);

/**
 * Removes and destroys a subscription created by {name}_subscribe()
 */
int {name}_unsubscribe(lcm_t *lcm, {name}_subscription_t* hid);

/**
 * Sets the queue capacity for a subscription: how many messages are
 * queued on it before messages are dropped (see
 * lcm_subscription_set_queue_capacity()).
 *
 * @param subs the subscription to modify.
 * @param num_messages The maximum number of messages to queue
 *  on the subscription.
 * @return 0 on success, <0 if an error occured
 */
int {name}_subscription_set_queue_capacity(
    {name}_subscription_t* subs, int num_messages);"
    )
}

/// lcm-gen's publish/subscribe functions for C type `name`, over `lcm_publish` / `lcm_subscribe`. Unlike lcm-gen's,
/// `_subscribe` checks its malloc and `_unsubscribe` a NULL subscription.
pub(super) fn pubsub_definitions(name: &str) -> String {
    format!(
        "int {name}_publish(lcm_t *lc, const char *channel, const {name} *p)
{{
    int status;
    int data_size;
    int max_data_size = {name}_encoded_size(p);
    uint8_t *buf;
    if (max_data_size < 0)
        return max_data_size;
    buf = (uint8_t *) malloc((size_t) max_data_size);
    if (!buf)
        return -1;
    data_size = {name}_encode(buf, 0, max_data_size, p);
    if (data_size < 0) {{
        free(buf);
        return data_size;
    }}
    status = lcm_publish(lc, channel, buf, (unsigned int) data_size);
    free(buf);
    return status;
}}

struct _{name}_subscription_t {{
    {name}_handler_t user_handler;
    void *userdata;
    lcm_subscription_t *lc_h;
}};

static void {name}_handler_stub(const lcm_recv_buf_t *rbuf, const char *channel, void *userdata)
{{
    int status;
    {name} p;
    {name}_subscription_t *h = ({name}_subscription_t *) userdata;
    memset(&p, 0, sizeof({name}));
    status = {name}_decode(rbuf->data, 0, (int) rbuf->data_size, &p);
    if (status < 0) {{
        fprintf(stderr, \"error %d decoding {name}!!!\\n\", status);
        return;
    }}
    h->user_handler(rbuf, channel, &p, h->userdata);
    {name}_decode_cleanup(&p);
}}

{name}_subscription_t *{name}_subscribe(lcm_t *lcm, const char *channel, {name}_handler_t f, void *userdata)
{{
    {name}_subscription_t *n = ({name}_subscription_t *) malloc(sizeof({name}_subscription_t));
    if (!n)
        return NULL;
    n->user_handler = f;
    n->userdata = userdata;
    n->lc_h = lcm_subscribe(lcm, channel, {name}_handler_stub, n);
    if (n->lc_h == NULL) {{
        fprintf(stderr, \"couldn't reg {name} LCM handler!\\n\");
        free(n);
        return NULL;
    }}
    return n;
}}

int {name}_subscription_set_queue_capacity({name}_subscription_t *subs, int num_messages)
{{
    if (!subs)
        return -1;
    return lcm_subscription_set_queue_capacity(subs->lc_h, num_messages);
}}

int {name}_unsubscribe(lcm_t *lcm, {name}_subscription_t *hid)
{{
    int status;
    if (!hid)
        return -1;
    status = lcm_unsubscribe(lcm, hid->lc_h);
    if (0 != status) {{
        fprintf(stderr, \"couldn't unsubscribe {name}_handler %p!\\n\", (void *) hid);
        return -1;
    }}
    free(hid);
    return 0;
}}"
    )
}
