package predictor

//go:generate go run ./internal/gentraces -out testdata
