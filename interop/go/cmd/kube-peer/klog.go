package main

import (
	"flag"

	"k8s.io/klog/v2"
)

// setupKlog: client-go's and apimachinery's klog output goes to stderr (its
// default); --verbose raises it to -v=4, which shows the protocol negotiation.
func setupKlog(verbose bool) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if verbose {
		_ = fs.Set("v", "4")
	}
}
