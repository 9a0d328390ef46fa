package signing_test

import (
	"fmt"

	"forgehooks.dev/forgehooks/signing"
)

func ExampleSign() {
	sig, err := signing.Sign("mysecret", []byte(`{"foo":"bar"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(sig)
	// Output: sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3
}

func ExampleVerify() {
	body := []byte(`{"foo":"bar"}`)
	sig := "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3"
	ok, err := signing.Verify("mysecret", body, sig)
	fmt.Println(ok, err)
	ok, err = signing.Verify("wrongsecret", body, sig)
	fmt.Println(ok, err)
	_, err = signing.Verify("mysecret", body, "")
	fmt.Println(err)
	// Output:
	// true <nil>
	// false <nil>
	// signing: signature is required
}

func ExampleVerifyWithFallback() {
	body := []byte(`{"foo":"bar"}`)
	// Signed by the forge with the old secret while the new one is being rolled out.
	sig, _ := signing.Sign("old-secret", body)
	ok, err := signing.VerifyWithFallback("new-secret", body, sig, "old-secret")
	fmt.Println(ok, err)
	// Output: true <nil>
}

func ExampleDigest() {
	d, err := signing.NewDigest("mysecret")
	if err != nil {
		panic(err)
	}
	// Hash the body as it arrives, for example with io.Copy from a request body.
	d.Write([]byte(`{"foo":`))
	d.Write([]byte(`"bar"}`))
	fmt.Println(d.Match("sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3"))
	// Output: true
}
