import packtune, matplotlib.pyplot as plt
run = packtune.run("examples/fashion_mnist.json")
print(run.best())
for trial, reports in run.results().groupby("trial"): plt.plot(reports["budget"], reports["val_accuracy"], marker="o", label=f"trial {trial}")
plt.xlabel("budget (epochs)"); plt.ylabel("val_accuracy"); plt.legend(ncol=4, fontsize=7); plt.savefig("val_accuracy.png", dpi=120)
