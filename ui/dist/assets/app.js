// Placeholder until the inbox's build lands here.
document.getElementById("app").textContent = "The askuser inbox is not built yet.";
