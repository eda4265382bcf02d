// Command temporal_activity runs the activity ApproveRefund once, as a Temporal worker would run it
// (without Temporal: the activity is a plain function of a context and its input, see activity.go),
// and prints the decision. Approve it from another terminal (`askuser pending`, `askuser answer RUN
// CALL --approve`) or the inbox:
//
//	go run ./examples/temporal_activity -addr 127.0.0.1:50051 -refund r-1042 -amount 12900
//
// A server with --auth keys wants an API key: -api-key, or ASKUSER_API_KEY.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"google.golang.org/grpc"

	"github.com/askuser-dev/askuser/clients/go/askuser"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "address of the askuser server")
	apiKey := flag.String("api-key", os.Getenv("ASKUSER_API_KEY"), "API key for a server with --auth keys")
	id := flag.String("refund", "r-1042", "the refund's id (the request id derives from it)")
	customer := flag.String("customer", "ACME Corp", "who asks for the refund")
	amount := flag.Int64("amount", 12900, "the amount, in cents")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var opts []grpc.DialOption
	if *apiKey != "" {
		opts = append(opts, askuser.WithAPIKey(*apiKey))
	}
	client, err := askuser.Dial(*addr, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporal_activity:", err)
		os.Exit(1)
	}
	defer client.Close()
	activities := &Activities{Askuser: client}
	refund := Refund{ID: *id, Customer: *customer, AmountCents: *amount, Reason: "the order arrived damaged"}
	fmt.Printf("Waiting for a person to approve refund %s (%s)...\n", refund.ID, dollars(refund.AmountCents))
	decision, err := activities.ApproveRefund(ctx, refund)
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporal_activity:", err)
		os.Exit(1)
	}
	if decision.Approved {
		fmt.Printf("Approved by %s: refund %s.\n", decision.DecidedBy, dollars(decision.AmountCents))
	} else {
		fmt.Printf("Not approved (%s).\n", decision.Reason)
	}
}
