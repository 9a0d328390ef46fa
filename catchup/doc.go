// Package catchup finds the webhook deliveries the forge sent while the receiver
// was not there, and has the forge send them again.
//
// The forge keeps a delivery log per hook (the app hook, a repository hook, an
// organization hook) for three days, one entry per attempt: the attempt's id,
// the delivery's guid (the X-Forge-Delivery header the receiver saw), its event,
// action, status and time. A failed attempt is never retried by the forge on
// its own. [Run] pages that log newest first back to a checkpoint, decides per
// guid, and asks for one redelivery of each guid that never succeeded and that
// the receiver does not already hold, within the forge's rate limits.
// [Every] runs it in the background of a receiver; [RedeliverGUID] has one
// delivery sent again on request.
//
// The checkpoint and the guids requested are kept between runs by
// [Checkpoints]: a [StateFile], [MemoryCheckpoints], or [StoreCheckpoints] over
// a durable key-value store such as the receiver's inbox.
//
// The REST paths and JSON are those of the forge's published REST description;
// [DefaultAPIURL] is the server it names. A self-hosted installation
// or a test server is reached with [Options.APIURL].
package catchup
