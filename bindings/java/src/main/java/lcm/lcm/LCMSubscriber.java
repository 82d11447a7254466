package lcm.lcm;

/**
 * Receives the messages of a subscription made with {@link LCM#subscribe}.
 *
 * <p>{@code messageReceived} runs on the {@link LCM}'s reader thread, one call at a time per {@code LCM}, as in
 * LCM's own jar: a slow subscriber delays the next message (which waits in its subscription's queue).
 */
public interface LCMSubscriber {
    /**
     * Called for each message on a channel the subscription's regular expression matches.
     *
     * @param lcm the {@code LCM} the subscription was made on
     * @param channel the channel the message came on
     * @param ins the message's bytes (fingerprint first, for LCM types), valid after the call returns too
     */
    void messageReceived(LCM lcm, String channel, LCMDataInputStream ins);
}
