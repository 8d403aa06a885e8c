# Excluded from the package by .terraformignore.
module "greeting" {
  source = "../.."
}
